/**
 * An `mcp.call` step next to an `http.request` step to the same local host (issue 32): each
 * request is a whole one-step run in wait mode (`POST /flows/{id}/runs?wait=true`), in both
 * modes, next to a trivial `Bun.serve`. An `mcp.call` attempt is a short MCP session
 * (initialize, the initialized notification, the call; the tool list is kept 60 s), so it
 * makes three requests where `http.request` makes one; the rows say what that costs.
 *
 *   bun bench/mcp-call.ts [--seconds N] [--connections N]
 *
 * The upstream is a minimal stateless Streamable HTTP MCP server (JSON answers, one `echo`
 * tool) and a plain JSON route on one `Bun.serve`, in a process of its own; 127.0.0.1 is
 * allowed to the platform's steps (HTTP_REQUEST_ALLOWED_NETWORKS). The platform runs as the
 * README starts it, in processes of its own, with NODE_ENV=production. Scale-out runs when
 * DATABASE_URL and REDIS_URL are set.
 */

import { freeLoopbackPort } from "../packages/db/src/testing.ts";
import { flag } from "./lib/args.ts";
import { type LoadResult, load, report } from "./lib/load.ts";
import {
  availableModes,
  callApi,
  type RunningPlatform,
  signUpForBench,
  startBaseline,
  startPlatform,
} from "./lib/platform.ts";

const SECONDS = flag("seconds", 10);
const CONNECTIONS = flag("connections", 64);

/** The upstream: `POST /mcp` answers MCP's JSON-RPC (initialize, tools/list, tools/call of `echo`), `POST /plain` echoes JSON. */
const UPSTREAM = `
const tool = { name: "echo", inputSchema: { type: "object", properties: { order: { type: "string" } }, required: ["order"] } };
const answer = (id, result) => Response.json({ jsonrpc: "2.0", id, result });
Bun.serve({
  port: Number(process.env.PORT), hostname: "127.0.0.1",
  async fetch(request) {
    const path = new URL(request.url).pathname;
    if (request.method !== "POST") return new Response(null, { status: 405 });
    const body = await request.json();
    if (path === "/plain") return Response.json({ echoed: body });
    if (body.id === undefined) return new Response(null, { status: 202 });
    if (body.method === "initialize") {
      return answer(body.id, { protocolVersion: body.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "bench", version: "1.0.0" } });
    }
    if (body.method === "tools/list") return answer(body.id, { tools: [tool] });
    if (body.method === "tools/call") return answer(body.id, { content: [], structuredContent: { echoed: body.params.arguments } });
    return Response.json({ jsonrpc: "2.0", id: body.id, error: { code: -32601, message: "no such method" } });
  },
});
setInterval(() => {}, 1 << 30);
`;

async function startUpstream(): Promise<{ url: string; stop(): Promise<void> }> {
  const port = await freeLoopbackPort();
  const child = Bun.spawn(["bun", "-e", UPSTREAM], { env: { ...process.env, PORT: String(port) }, stderr: "inherit" });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 100; i++) {
    const up = await fetch(`${url}/plain`, { method: "POST", body: "{}" }).then(
      (r) => r.ok,
      () => false,
    );
    if (up) break;
    await Bun.sleep(50);
  }
  return {
    url,
    async stop() {
      child.kill();
      await child.exited;
    },
  };
}

async function measureMode(platform: RunningPlatform, upstream: string): Promise<[string, LoadResult][]> {
  const { token } = await signUpForBench(platform.url);
  const auth = { authorization: `Bearer ${token}`, "content-type": "application/json" };
  const flowOf = async (name: string, step: Record<string, unknown>) =>
    (await callApi(platform, token, "POST", "/flows", { name, steps: [{ name: "call", ...step }] })).data.id as string;
  const viaMcp = await flowOf("mcp.call bench", {
    subject: "mcp.call",
    payload: { server: `${upstream}/mcp`, tool: "echo", arguments: { order: "{{trigger.order}}" } },
  });
  const viaHttp = await flowOf("http.request bench", {
    subject: "http.request",
    payload: { method: "POST", url: `${upstream}/plain`, body: { order: "{{trigger.order}}" } },
  });
  const runOf = (flowId: string) => ({
    url: `${platform.url}/flows/${flowId}/runs?wait=true`,
    method: "POST" as const,
    headers: auth,
    body: JSON.stringify({ order: "o_42" }),
  });
  // Check each answer once, and warm up.
  for (const [flowId, expected] of [
    [viaMcp, '{"echoed":{"order":"o_42"}}'],
    [viaHttp, '"echoed":{"order":"o_42"}'],
  ] as const) {
    const first = await fetch(runOf(flowId).url, runOf(flowId));
    const text = await first.text();
    if (first.status !== 200 || !text.includes(expected)) throw new Error(`a run answered ${first.status} ${text}`);
    await load({ ...runOf(flowId), connections: CONNECTIONS, durationSeconds: 2 });
  }
  const http = await load({ ...runOf(viaHttp), connections: CONNECTIONS, durationSeconds: SECONDS });
  const mcp = await load({ ...runOf(viaMcp), connections: CONNECTIONS, durationSeconds: SECONDS });
  const cost = Math.round((http.rps / Math.max(mcp.rps, 1) - 1) * 100);
  return [
    ["one-step run, http.request to the upstream", http],
    [`one-step run, mcp.call to the upstream (time per run vs http.request: ${cost >= 0 ? "+" : ""}${cost}%)`, mcp],
  ];
}

const baseline = await startBaseline();
const upstream = await startUpstream();
try {
  for (const mode of availableModes()) {
    const platform = await startPlatform(mode, { HTTP_REQUEST_ALLOWED_NETWORKS: "127.0.0.1" });
    try {
      const rows = await measureMode(platform, upstream.url);
      const trivial = await load({ url: baseline.url, connections: CONNECTIONS, durationSeconds: SECONDS });
      report(`${platform.mode} mode, ${CONNECTIONS} connections, ${SECONDS} s each`, trivial, rows);
    } finally {
      await platform.stop();
    }
  }
} finally {
  await upstream.stop();
  await baseline.stop();
}
