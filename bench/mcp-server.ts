/**
 * A flow called as an MCP tool (issue 32's target: `tools/call` of a one-step flow costs at
 * most 15% more than `POST /flows/{id}/runs?wait=true` of the same flow, measured in the same
 * run), in both modes, next to a trivial `Bun.serve`. Each request is a whole run: recorded,
 * executed and answered (in the API process: the flow only computes, see engine/in-place.ts);
 * a `tools/call` besides authenticates, finds the tool, checks the arguments against its input
 * schema and answers through the SDK's transport (as JSON, since the run ends at once).
 *
 *   bun bench/mcp-server.ts [--seconds N] [--connections N]
 *
 * The platform runs as the README starts it, in processes of its own, with NODE_ENV=production.
 * Scale-out runs when DATABASE_URL and REDIS_URL are set.
 */

import { flag } from "./lib/args.ts";
import { reportEveryMode } from "./lib/every-mode.ts";
import { type LoadResult, load } from "./lib/load.ts";
import { callApi, type RunningPlatform, signUpForBench } from "./lib/platform.ts";

const SECONDS = flag("seconds", 10);
const CONNECTIONS = flag("connections", 64);

const ARGUMENTS = { order_id: "o_42", qty: 3 };

async function measureMode(platform: RunningPlatform): Promise<[string, LoadResult][]> {
  const { token } = await signUpForBench(platform.url);
  const auth = { authorization: `Bearer ${token}`, "content-type": "application/json" };
  const flow = await callApi(platform, token, "POST", "/flows", {
    name: "mcp bench",
    steps: [
      { name: "reply", subject: "transform", payload: { order: "{{trigger.order_id}}", qty: "{{trigger.qty}}" } },
    ],
    mcp: {
      tool: "bench_order",
      description: "answers the order it is given",
      input_schema: {
        type: "object",
        properties: { order_id: { type: "string" }, qty: { type: "integer", minimum: 1 } },
        required: ["order_id"],
      },
    },
  });
  const byHand = {
    url: `${platform.url}/flows/${flow.data.id}/runs?wait=true`,
    method: "POST" as const,
    headers: auth,
    body: JSON.stringify(ARGUMENTS),
  };
  const toolCall = {
    url: `${platform.url}/mcp`,
    method: "POST" as const,
    headers: { ...auth, accept: "application/json, text/event-stream" },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "bench_order", arguments: ARGUMENTS },
    }),
  };
  // Check the answer once, and warm up (schemas compiled, connections open).
  const first = await fetch(toolCall.url, toolCall);
  const text = await first.text();
  if (first.status !== 200 || !text.includes('"structuredContent":{')) {
    throw new Error(`tools/call answered ${first.status} ${text}`);
  }
  await load({ ...toolCall, connections: CONNECTIONS, durationSeconds: 2 });
  await load({ ...byHand, connections: CONNECTIONS, durationSeconds: 2 });

  const hand = await load({ ...byHand, connections: CONNECTIONS, durationSeconds: SECONDS });
  const tool = await load({ ...toolCall, connections: CONNECTIONS, durationSeconds: SECONDS });
  // Time per call, from the rates at the same connections: positive when a tool call costs more.
  const overhead = Math.round((hand.rps / Math.max(tool.rps, 1) - 1) * 100);
  return [
    ["by hand, wait mode (POST /flows/{id}/runs?wait=true)", hand],
    [`MCP tools/call (time per call vs by hand: ${overhead >= 0 ? "+" : ""}${overhead}%, target ≤ +15%)`, tool],
  ];
}

await reportEveryMode({ connections: CONNECTIONS, seconds: SECONDS }, measureMode);
