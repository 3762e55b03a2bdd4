import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { Server } from "bun";
import { type Caller, call, newCaller } from "./context.ts";
import { runModes, startTestApi, type TestApi } from "./harness.ts";
import { invalidInput } from "./invalid-input.ts";
import { type McpUpstream, startMcpUpstream } from "./mcp-upstream.ts";
import { type StandInRegistry, startStandInRegistry } from "./registry-upstream.ts";

/** The SDK's McpServer answering only requests that carry `Bearer <token>`: its one tool is named after the token. */
function startLockedUpstream(token: string): { url: string; stop(): void } {
  const http = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(request) {
      if (request.headers.get("authorization") !== `Bearer ${token}`) {
        return Response.json({ error: "unauthorized" }, { status: 401 });
      }
      const server = new McpServer({ name: "locked", version: "1.0.0" });
      server.registerTool(`tool_for_${token}`, { description: "Behind a token.", inputSchema: {} }, async () => ({
        content: [],
      }));
      const transport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableJsonResponse: true,
      });
      await server.connect(transport);
      return transport.handleRequest(request);
    },
  });
  return { url: `http://127.0.0.1:${http.port}/mcp`, stop: () => http.stop(true) };
}

/** A server that takes requests and never answers them. */
function startSilentUpstream(): { url: string; stop(): void } {
  const http: Server<undefined> = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    idleTimeout: 0,
    fetch: () => new Promise<Response>(() => undefined),
  });
  return { url: `http://127.0.0.1:${http.port}/mcp`, stop: () => http.stop(true) };
}

/**
 * `POST /hub/mcp/registry/tools`: a registry server's tools, asked at the streamable-http
 * remote its mirror entry publishes (the SDK's own McpServer on a local port, reachable
 * because 127.0.0.1 is in HTTP_REQUEST_ALLOWED_NETWORKS), through the address guard.
 */
for (const { label, backend, redis, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(`registry server tools on ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;
    let owner: Caller;
    let upstream: McpUpstream;
    let registry: StandInRegistry;
    beforeAll(async () => {
      upstream = startMcpUpstream();
      registry = await startStandInRegistry([]);
      api = await startTestApi({
        backend,
        redis,
        env: {
          HTTP_REQUEST_ALLOWED_NETWORKS: "127.0.0.1",
          MCP_REGISTRY_URL: registry.url,
          MCP_REGISTRY_TIMEOUT_MS: "1500",
        },
      });
      owner = await newCaller(api, "registry-tools");
    }, 60_000);
    afterAll(async () => {
      await api?.stop();
      upstream?.stop();
      await registry?.stop();
    });

    /** Publishes a server with these remotes (and a package, for the local-only kind) and syncs the mirror. */
    const publish = async (remotes: Record<string, unknown>[], packaged = false) => {
      const name = `io.example/tools-${crypto.randomUUID().slice(0, 8)}`;
      registry.publish({
        name,
        version: "1.2.0",
        description: "tools for tests",
        remotes,
        ...(packaged ? { packages: [{ registryType: "npm", identifier: "@example/tools", version: "1.2.0" }] } : {}),
      });
      await api.services.registry.sync.run();
      return name;
    };
    const toolsOf = (name: string, headers?: Record<string, string>, caller: Caller | null = owner) =>
      call(api, caller, "POST", "/hub/mcp/registry/tools", { name, ...(headers ? { headers } : {}) });

    test("a server's tools are read at its streamable-http remote: name, description and input schema, afresh each time", async () => {
      const name = await publish([
        { type: "sse", url: "https://sse.example.com/sse" },
        { type: "streamable-http", url: upstream.url },
      ]);
      // The search shows the remotes a person picks from.
      const found = await call(api, owner, "GET", `/hub/mcp/registry?search=${encodeURIComponent(name)}`);
      expect(found.body.servers[0].remotes).toEqual([
        { type: "sse", url: "https://sse.example.com/sse" },
        { type: "streamable-http", url: upstream.url },
      ]);

      const lists = upstream.lists();
      const answer = await toolsOf(name);
      expect(answer.status).toBe(200);
      expect(answer.body.data).toMatchObject({
        name,
        version: "1.2.0",
        remote: { type: "streamable-http", url: upstream.url },
      });
      const tools = answer.body.data.tools as { name: string; description?: string; inputSchema: unknown }[];
      expect(tools.map((tool) => tool.name).sort()).toEqual(["add", "hold", "refuse", "shout", "slow"]);
      const add = tools.find((tool) => tool.name === "add");
      expect(add?.description).toBe("Adds two numbers.");
      expect(add?.inputSchema).toMatchObject({
        type: "object",
        properties: { a: { type: "number" }, b: { type: "number" } },
        required: ["a", "b"],
      });
      expect(upstream.lists()).toBe(lists + 1);
      // Never an earlier answer: the server is asked again.
      expect((await toolsOf(name)).status).toBe(200);
      expect(upstream.lists()).toBe(lists + 2);
    });

    test("headers reach the server, secrets read: a list read with one credential is never shown to another", async () => {
      const locked = startLockedUpstream("alpha");
      try {
        const name = await publish([{ type: "streamable-http", url: locked.url }]);
        const none = await toolsOf(name);
        expect(none.status).toBe(502);
        expect(none.body.error).toStartWith(`the tools of registry server "${name}" could not be read: `);
        expect(none.body.error).toContain("401");

        const put = await call(api, owner, "PUT", "/secrets/locked_token", { value: "alpha" });
        expect(put.status).toBeLessThan(300);
        const withSecret = await toolsOf(name, { authorization: "Bearer {{secrets.locked_token}}" });
        expect(withSecret.status).toBe(200);
        expect(withSecret.body.data.tools.map((tool: { name: string }) => tool.name)).toEqual(["tool_for_alpha"]);
        expect(JSON.stringify(withSecret.body)).not.toContain("Bearer alpha");

        // The same server right after, with another credential: asked again, and refused.
        const other = await toolsOf(name, { authorization: "Bearer beta" });
        expect(other.status).toBe(502);
        // Another account without the credential is refused too, though the owner's list was just read.
        const stranger = await newCaller(api, "registry-tools-other");
        expect((await toolsOf(name, undefined, stranger)).status).toBe(502);
      } finally {
        locked.stop();
      }
    });

    test("a server without a streamable-http remote is 409 naming what it has; an unknown one 404", async () => {
      const sseOnly = await publish([{ type: "sse", url: "https://sse.example.com/sse" }]);
      const sse = await toolsOf(sseOnly);
      expect(sse).toMatchObject({
        status: 409,
        body: {
          error: `registry server "${sseOnly}" (version 1.2.0) has no streamable-http remote at an http(s) URL to ask for its tools; its remotes: sse https://sse.example.com/sse`,
        },
      });
      const packaged = await publish([], true);
      const local = await toolsOf(packaged);
      expect(local.status).toBe(409);
      expect(local.body.error).toEndWith("; it publishes no remote (only packages to run locally)");

      const unknown = await toolsOf("io.example/nowhere");
      expect(unknown).toMatchObject({
        status: 404,
        body: { error: 'no server "io.example/nowhere" in the MCP registry mirror' },
      });
    });

    test("the address guard refuses a private remote (502), as it would the step's call", async () => {
      const name = await publish([{ type: "streamable-http", url: `http://10.0.0.1:${upstream.port}/mcp` }]);
      const refused = await toolsOf(name);
      expect(refused).toMatchObject({
        status: 502,
        body: {
          error: `the tools of registry server "${name}" could not be read: refused 10.0.0.1 (private 10.0.0.0/8): flows may not reach private, loopback, link-local or metadata addresses (ALLOW_PRIVATE_NETWORK)`,
        },
      });
    });

    test("a server that cannot be reached is 502; one that does not answer in time is 504", async () => {
      const gone = startMcpUpstream();
      const goneUrl = gone.url;
      gone.stop();
      const unreachable = await toolsOf(await publish([{ type: "streamable-http", url: goneUrl }]));
      expect(unreachable.status).toBe(502);
      expect(unreachable.body.error).toContain("could not be read");

      const silent = startSilentUpstream();
      try {
        const name = await publish([{ type: "streamable-http", url: silent.url }]);
        const late = await toolsOf(name);
        expect(late).toMatchObject({
          status: 504,
          body: { error: `registry server "${name}" (${silent.url}) did not list its tools within 1500 ms` },
        });
      } finally {
        silent.stop();
      }
    });

    test("bad input is 400 naming the field; no credential is 401", async () => {
      const name = await publish([{ type: "streamable-http", url: upstream.url }]);
      expect(await toolsOf(name, { "bad header": "x" })).toMatchObject({
        status: 400,
        body: invalidInput(["headers.bad header", "must be an HTTP header name"]),
      });
      expect(await toolsOf(name, { authorization: "Bearer {{trigger.token}}" })).toMatchObject({
        status: 400,
        body: invalidInput(["headers", "may hold text and {{secrets.<key>}} of the account's existing secrets only"]),
      });
      expect(await toolsOf(name, { authorization: "Bearer {{secrets.never_written}}" })).toMatchObject({
        status: 400,
      });
      expect(await call(api, owner, "POST", "/hub/mcp/registry/tools", {})).toMatchObject({
        status: 400,
        body: invalidInput(["name", "is required"]),
      });
      expect((await toolsOf(name, undefined, null)).status).toBe(401);
    });
  });
}
