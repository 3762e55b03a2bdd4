import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { Server } from "bun";
import { z } from "zod";

/**
 * A remote MCP server for `mcp.call` tests and benchmarks: the SDK's own `McpServer` behind
 * its Streamable HTTP transport (stateless, a server per request), served by `Bun.serve` on
 * 127.0.0.1. It counts the calls of each tool and the tool lists it answers.
 *
 * Tools: `add {a, b}` answers `{sum}` as structured content; `shout {text}` answers text
 * only; `refuse {}` answers `isError` with a text that quotes the request's authorization
 * header; `slow {ms}` answers `{slept: ms}` after `ms`; `hold {n}` counts its calls per `n`
 * and waits at a gate until `openGate()`, then answers `{n}`. `die()` stops it at once,
 * cutting the connections of calls in flight; `revive()` listens again on the same port.
 * `sessionsUrl` serves the same tools with sessions (`Mcp-Session-Id`), kept until the
 * client ends them (`DELETE`): `openSessions()` counts those not ended.
 */
export interface McpUpstream {
  url: string;
  /** The same tools, with sessions kept on the server until the client ends them. */
  sessionsUrl: string;
  /** Sessions begun and not ended by their client. */
  openSessions(): number;
  port: number;
  /** Calls of each tool so far. */
  calls: Map<string, number>;
  /** `tools/list` requests answered. */
  lists(): number;
  /** Calls of `hold` per `n`. */
  holds: Map<number, number>;
  /** Calls of `hold` waiting at the gate. */
  held(): number;
  openGate(): void;
  /** Stops at once: calls in flight lose their connection. */
  die(): void;
  /** Listens again, on the same port. */
  revive(): void;
  stop(): void;
}

export function startMcpUpstream(): McpUpstream {
  const calls = new Map<string, number>();
  let lists = 0;
  const holds = new Map<number, number>();
  let held = 0;
  let openGate: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => {
    openGate = resolve;
  });
  const count = (tool: string) => {
    const n = (calls.get(tool) ?? 0) + 1;
    calls.set(tool, n);
    return n;
  };

  function toolServer(authorization: string): McpServer {
    const server = new McpServer({ name: "test-upstream", version: "1.0.0" });
    server.registerTool(
      "add",
      {
        description: "Adds two numbers.",
        inputSchema: { a: z.number(), b: z.number() },
        outputSchema: { sum: z.number() },
      },
      async ({ a, b }) => {
        count("add");
        return { content: [{ type: "text", text: String(a + b) }], structuredContent: { sum: a + b } };
      },
    );
    server.registerTool("shout", { inputSchema: { text: z.string() } }, async ({ text }) => {
      count("shout");
      return { content: [{ type: "text", text: text.toUpperCase() }] };
    });
    server.registerTool("refuse", { inputSchema: {} }, async () => {
      count("refuse");
      return { isError: true, content: [{ type: "text", text: `order refused for ${authorization || "nobody"}` }] };
    });
    server.registerTool("slow", { inputSchema: { ms: z.number() } }, async ({ ms }) => {
      count("slow");
      await Bun.sleep(ms);
      return { content: [{ type: "text", text: "done" }], structuredContent: { slept: ms } };
    });
    server.registerTool("hold", { inputSchema: { n: z.number().int() } }, async ({ n }) => {
      holds.set(n, (holds.get(n) ?? 0) + 1);
      held += 1;
      await gate;
      held -= 1;
      return { content: [{ type: "text", text: String(n) }], structuredContent: { n } };
    });
    return server;
  }

  const serve = (port: number): Server<undefined> =>
    Bun.serve({
      port,
      hostname: "127.0.0.1",
      // Calls held at the gate keep their connection as long as it takes.
      idleTimeout: 0,
      fetch: answer,
    });
  let http: Server<undefined> | undefined;
  const sessions = new Map<string, WebStandardStreamableHTTPServerTransport>();
  const upstream: McpUpstream = {
    url: "",
    sessionsUrl: "",
    openSessions: () => sessions.size,
    port: 0,
    calls,
    lists: () => lists,
    holds,
    held: () => held,
    openGate: () => openGate(),
    die: () => {
      http?.stop(true);
      http = undefined;
    },
    revive: () => {
      http ??= serve(upstream.port);
    },
    stop: () => {
      openGate();
      upstream.die();
    },
  };

  async function answer(request: Request): Promise<Response> {
    if (request.method === "POST") {
      const message = (await request
        .clone()
        .json()
        .catch(() => null)) as { method?: string } | null;
      if (message?.method === "tools/list") lists += 1;
    }
    if (new URL(request.url).pathname === "/sessions") return inSession(request);
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    await toolServer(request.headers.get("authorization") ?? "").connect(transport);
    return transport.handleRequest(request);
  }
  /** A request of a session: the session its id names, or a new one (an initialize). */
  async function inSession(request: Request): Promise<Response> {
    const id = request.headers.get("mcp-session-id");
    const known = id === null ? undefined : sessions.get(id);
    if (known) return known.handleRequest(request);
    if (id !== null) return new Response("no such session", { status: 404 });
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => crypto.randomUUID(),
      enableJsonResponse: true,
      onsessioninitialized: (sessionId) => {
        sessions.set(sessionId, transport);
      },
      onsessionclosed: (sessionId) => {
        sessions.delete(sessionId);
      },
    });
    await toolServer(request.headers.get("authorization") ?? "").connect(transport);
    return transport.handleRequest(request);
  }

  http = serve(0);
  upstream.port = http.port ?? 0;
  upstream.url = `http://127.0.0.1:${upstream.port}/mcp`;
  upstream.sessionsUrl = `http://127.0.0.1:${upstream.port}/sessions`;
  return upstream;
}
