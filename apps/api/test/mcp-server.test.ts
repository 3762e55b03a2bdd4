import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { eventually } from "@platform/core/testing";
import { type Caller, call, newCaller, runUntil } from "./context.ts";
import { runModes, startPeerApi, startTestApi, type TestApi } from "./harness.ts";

/**
 * The platform as an MCP server (issue 32): an account's flows marked as tools, listed and
 * called at `/mcp` by the SDK's own client over Streamable HTTP, in both ways the platform runs.
 */

/**
 * How long a call waits for its run (WAIT_TIMEOUT_MS): past the HTTP server's 10 s idle
 * timeout, which a run of `LONG_MS` outlasts; the slow flow's delay outlives the wait.
 */
const WAIT_MS = 12_000;
const LONG_MS = 10_500;
const SLOW_MS = 13_000;

const REFUND_INPUT = {
  type: "object" as const,
  properties: { order_id: { type: "string", pattern: "^o_[0-9]+$" }, amount: { type: "number", minimum: 0 } },
  required: ["order_id"],
  additionalProperties: false,
};
const REFUND_OUTPUT = {
  type: "object" as const,
  properties: { refunded: { type: "string" }, amount: {} },
  required: ["refunded"],
};

const tool = (name: string, extra: Record<string, unknown> = {}) => ({
  tool: name,
  description: `the ${name} tool`,
  input_schema: { type: "object", properties: {} },
  ...extra,
});

for (const { label, backend, redis, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(`the MCP endpoint on ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;
    let owner: Caller;
    let stranger: Caller;
    const clients: Client[] = [];

    beforeAll(async () => {
      api = await startTestApi({ backend, redis, worker: true, env: { WAIT_TIMEOUT_MS: String(WAIT_MS) } });
      owner = await newCaller(api, "mcp-owner");
      stranger = await newCaller(api, "mcp-stranger");
    }, 60_000);
    afterAll(async () => {
      await Promise.all(clients.map((client) => client.close()));
      await api.stop();
    });

    /** The SDK's client, connected to `/mcp` with these headers. */
    async function connect(headers: Record<string, string>): Promise<Client> {
      const client = new Client({ name: "mcp-server-test", version: "1.0.0" });
      const transport = new StreamableHTTPClientTransport(new URL(`${api.url}/mcp`), { requestInit: { headers } });
      await client.connect(transport);
      clients.push(client);
      return client;
    }

    /** A flow of the caller offered as a tool (`mcp`); answers its id. */
    async function toolFlow(caller: Caller, mcp: Record<string, unknown>, steps: unknown[] = ECHO): Promise<string> {
      const created = await call(api, caller, "POST", "/flows", { name: `flow ${mcp.tool}`, steps, mcp });
      if (created.status !== 200) throw new Error(`POST /flows: ${created.status} ${JSON.stringify(created.body)}`);
      return created.body.data.id;
    }

    async function apiKey(caller: Caller, allowedPaths?: string[]): Promise<string> {
      const created = await call(api, caller, "POST", "/accounts/api-keys", {
        name: "mcp",
        ...(allowedPaths ? { allowed_paths: allowedPaths } : {}),
      });
      expect(created.status).toBe(200);
      return created.body.data.key;
    }

    const toolNames = async (client: Client) => (await client.listTools()).tools.map((listed) => listed.name);
    const runsOf = async (flowId: string) => (await call(api, owner, "GET", `/flows/${flowId}/runs`)).body.data;

    /** The JSON-RPC error a call is refused with. */
    async function refusal(pending: Promise<unknown>): Promise<McpError> {
      const error = await pending.then(
        () => null,
        (thrown: unknown) => thrown,
      );
      expect(error).toBeInstanceOf(McpError);
      return error as McpError;
    }

    test("initialize names the server and its tools capability, and negotiates the protocol version", async () => {
      const client = await connect(owner.headers);
      expect(client.getServerVersion()?.name).toBe("workflow-platform");
      expect(client.getServerCapabilities()?.tools).toBeDefined();

      const initialize = (protocolVersion: string) =>
        api.request("/mcp", {
          method: "POST",
          headers: { ...owner.headers, accept: "application/json, text/event-stream" },
          json: {
            jsonrpc: "2.0",
            id: 1,
            method: "initialize",
            params: { protocolVersion, capabilities: {}, clientInfo: { name: "raw", version: "1" } },
          },
        });
      // An older version the server speaks is kept; one it does not know gets the latest it does.
      const older = await initialize("2025-03-26");
      expect(older.status).toBe(200);
      // biome-ignore lint/suspicious/noExplicitAny: a JSON-RPC answer, read by the assertions
      const answer = async (response: Promise<Response>): Promise<any> => (await response).json();
      expect((await answer(Promise.resolve(older))).result.protocolVersion).toBe("2025-03-26");
      const unknown = await answer(initialize("1999-01-01"));
      expect(unknown.result.protocolVersion).not.toBe("1999-01-01");
      expect(unknown.result.serverInfo.name).toBe("workflow-platform");
    });

    test("without a valid credential the endpoint is 401 with WWW-Authenticate: Bearer; GET and DELETE are 405", async () => {
      const post = (headers: Record<string, string>) =>
        api.request("/mcp", {
          method: "POST",
          headers: { ...headers, accept: "application/json, text/event-stream" },
          json: { jsonrpc: "2.0", id: 1, method: "tools/list" },
        });
      const anonymous = await post({});
      expect(anonymous.status).toBe(401);
      expect(anonymous.headers.get("www-authenticate")).toBe('Bearer realm="mcp"');
      expect(await anonymous.json()).toEqual({ error: "missing credential" });
      for (const token of ["not-a-token", "wfk_not-a-key"]) {
        const refused = await post({ authorization: `Bearer ${token}` });
        expect(refused.status).toBe(401);
        expect(refused.headers.get("www-authenticate")).toBe('Bearer realm="mcp", error="invalid_token"');
      }
      // Sessions' GET stream and DELETE do not exist here: 405, once the caller is known.
      for (const method of ["GET", "DELETE"]) {
        expect((await api.request("/mcp", { method })).status).toBe(401);
        const refused = await api.request("/mcp", {
          method,
          headers: { ...owner.headers, accept: "text/event-stream" },
        });
        expect({ method, status: refused.status, allow: refused.headers.get("allow") }).toEqual({
          method,
          status: 405,
          allow: "POST",
        });
      }
      // The SDK's client hears the 401 at connect.
      const client = new Client({ name: "anonymous", version: "1.0.0" });
      await expect(client.connect(new StreamableHTTPClientTransport(new URL(`${api.url}/mcp`)))).rejects.toThrow();
    });

    test("a flow's mcp field is shown on GET /flows/{id}, null when it is not a tool", async () => {
      const mcp = tool("shown_tool", { input_schema: REFUND_INPUT, output_schema: REFUND_OUTPUT });
      const flowId = await toolFlow(owner, mcp);
      expect((await call(api, owner, "GET", `/flows/${flowId}`)).body.data.mcp).toEqual(mcp);
      const withoutOutput = await toolFlow(owner, tool("shown_without_output"));
      expect((await call(api, owner, "GET", `/flows/${withoutOutput}`)).body.data.mcp).toEqual({
        ...tool("shown_without_output"),
        output_schema: null,
      });
      const plain = await call(api, owner, "POST", "/flows", { name: "plain", steps: ECHO });
      expect(plain.body.data.mcp).toBeNull();
      // PUT replaces the definition: leaving mcp out withdraws the tool.
      const replaced = await call(api, owner, "PUT", `/flows/${flowId}`, { name: "no longer a tool", steps: ECHO });
      expect(replaced.status).toBe(200);
      expect(replaced.body.data.mcp).toBeNull();
    });

    test("tools/list lists the account's tools with their descriptions and schemas, as far as the credential may start them", async () => {
      const first = await toolFlow(
        owner,
        tool("list_first", { input_schema: REFUND_INPUT, output_schema: REFUND_OUTPUT }),
      );
      await toolFlow(owner, tool("list_second"));
      await call(api, owner, "POST", "/flows", { name: "not a tool", steps: ECHO });

      const member = await connect(owner.headers);
      const { tools } = await member.listTools();
      expect(tools.find((listed) => listed.name === "list_first")).toEqual({
        name: "list_first",
        title: "flow list_first",
        description: "the list_first tool",
        inputSchema: REFUND_INPUT,
        outputSchema: REFUND_OUTPUT,
      });
      expect(tools.map((listed) => listed.name)).toEqual(expect.arrayContaining(["list_first", "list_second"]));

      // A key sees the flows its allowed_paths let it start, sent as Bearer or as X-Api-Key.
      const scoped = await apiKey(owner, [`POST /flows/${first}/runs`]);
      const scopedNames = await toolNames(await connect({ authorization: `Bearer ${scoped}` }));
      expect(scopedNames).toContain("list_first");
      expect(scopedNames).not.toContain("list_second");
      expect(await toolNames(await connect({ "x-api-key": scoped }))).toEqual(scopedNames);
      const readOnly = await apiKey(owner, ["GET /flows/*", "/storage/*"]);
      expect(await toolNames(await connect({ authorization: `Bearer ${readOnly}` }))).toEqual([]);
      const unrestricted = await apiKey(owner);
      expect(await toolNames(await connect({ authorization: `Bearer ${unrestricted}` }))).toEqual(
        await toolNames(member),
      );

      // A key may not call a tool it does not see.
      const refused = await refusal(
        (await connect({ authorization: `Bearer ${scoped}` })).callTool({ name: "list_second", arguments: {} }),
      );
      expect(refused.code).toBe(ErrorCode.InvalidParams);
      expect(refused.message).toContain("unknown tool: list_second");
    });

    test("tools/call runs the flow with the arguments as trigger data and answers its output as structuredContent and text; the run is a normal run", async () => {
      const flowId = await toolFlow(
        owner,
        tool("refund_order", { input_schema: REFUND_INPUT, output_schema: REFUND_OUTPUT }),
        [
          {
            name: "refund",
            node_type: "function",
            subject: "transform",
            payload: { refunded: "{{trigger.order_id}}", amount: "{{trigger.amount}}" },
          },
        ],
      );
      const client = await connect(owner.headers);
      await client.listTools();
      const answered = await client.callTool({ name: "refund_order", arguments: { order_id: "o_42", amount: 9.5 } });
      expect(answered.isError).toBeUndefined();
      expect(answered.structuredContent).toEqual({ refunded: "o_42", amount: 9.5 });
      // The text block is the same output as JSON, for clients that read only text.
      const [text] = answered.content as { type: string; text: string }[];
      expect(text?.type).toBe("text");
      expect(JSON.parse(text?.text ?? "")).toEqual({ refunded: "o_42", amount: 9.5 });
      const runId = answered._meta?.run_id as string;

      const run = (await call(api, owner, "GET", `/runs/${runId}`)).body;
      expect(run).toMatchObject({
        id: runId,
        flow_id: flowId,
        status: "succeeded",
        trigger: { order_id: "o_42", amount: 9.5 },
        output: { refunded: "o_42", amount: 9.5 },
      });
      expect((await runsOf(flowId)).map((listed: { id: string }) => listed.id)).toEqual([runId]);
      const replayed = await call(api, owner, "POST", `/runs/${runId}/replay`);
      expect(replayed.status).toBe(200);
    });

    test("arguments the input schema refuses are a -32602 error naming the fields, and start no run", async () => {
      const flowId = await toolFlow(owner, tool("strict_refund", { input_schema: REFUND_INPUT }));
      const client = await connect(owner.headers);
      const refused = await refusal(client.callTool({ name: "strict_refund", arguments: { amount: -1, note: "x" } }));
      expect(refused.code).toBe(ErrorCode.InvalidParams);
      expect(refused.message).toContain("arguments.order_id: is required");
      expect(refused.message).toContain("arguments.amount: must be >= 0");
      expect(refused.message).toContain("arguments.note: is not a property the schema allows");
      const pattern = await refusal(client.callTool({ name: "strict_refund", arguments: { order_id: "42" } }));
      expect(pattern.message).toContain('arguments.order_id: must match pattern "^o_[0-9]+$"');
      expect(await runsOf(flowId)).toEqual([]);
    });

    test("a failed run answers isError with the error the run shows", async () => {
      await toolFlow(owner, tool("failing_tool"), [
        {
          name: "save",
          node_type: "function",
          subject: "kv.put",
          payload: { bucket: "no-such-bucket", key: "k", value: 1 },
        },
      ]);
      const client = await connect(owner.headers);
      const answered = await client.callTool({ name: "failing_tool", arguments: {} });
      expect(answered.isError).toBe(true);
      const runId = answered._meta?.run_id as string;
      const run = (await call(api, owner, "GET", `/runs/${runId}`)).body;
      expect(run.status).toBe("failed");
      expect(answered.content).toEqual([{ type: "text", text: run.error }]);
      expect(run.error).toBe('step "save" failed: bucket not found');
    });

    test("a call of a flow that runs in place is answered as JSON; one that may outlast the idle timeout as a stream", async () => {
      await toolFlow(owner, tool("computed_tool"), [
        { name: "sum", node_type: "function", subject: "transform", payload: { sum: "{{trigger.a + trigger.b}}" } },
      ]);
      await toolFlow(owner, tool("paused_tool"), [
        { name: "pause", node_type: "function", subject: "delay", payload: { ms: 10 } },
      ]);
      const callOf = (name: string) =>
        api.request("/mcp", {
          method: "POST",
          headers: { ...owner.headers, accept: "application/json, text/event-stream" },
          json: { jsonrpc: "2.0", id: 7, method: "tools/call", params: { name, arguments: { a: 2, b: 3 } } },
        });
      // The first call of a flow in a process goes through the queue (and teaches the process the flow runs in place).
      const first = await callOf("computed_tool");
      expect(first.headers.get("content-type")).toContain("text/event-stream");
      expect(await first.text()).toContain('"structuredContent":{"sum":5}');
      // biome-ignore lint/suspicious/noExplicitAny: a JSON-RPC answer, read by the assertion
      let computed: any;
      await eventually(async () => {
        const answered = await callOf("computed_tool");
        if (!answered.headers.get("content-type")?.includes("application/json")) return false;
        computed = await answered.json();
        return true;
      });
      expect(computed.result.structuredContent).toEqual({ sum: 5 });
      for (let i = 0; i < 2; i++) {
        const paused = await callOf("paused_tool");
        expect(paused.headers.get("content-type")).toContain("text/event-stream");
        await paused.text();
      }
    });

    test("a run longer than the HTTP server's idle timeout still answers its output", async () => {
      await toolFlow(owner, tool("long_tool"), [
        { name: "pause", node_type: "function", subject: "delay", payload: { ms: LONG_MS } },
        { name: "done", node_type: "function", subject: "transform", payload: { done: true } },
      ]);
      const client = await connect(owner.headers);
      const answered = await client.callTool({ name: "long_tool", arguments: {} }, undefined, { timeout: 30_000 });
      expect(answered.structuredContent).toEqual({ done: true });
    }, 30_000);

    test("a run that outlives the wait answers its id and where to follow it, with progress while it runs", async () => {
      const flowId = await toolFlow(owner, tool("slow_tool"), [
        { name: "pause", node_type: "function", subject: "delay", payload: { ms: SLOW_MS } },
        { name: "done", node_type: "function", subject: "transform", payload: { done: true } },
      ]);
      const client = await connect(owner.headers);
      const progress: { progress: number; message?: string }[] = [];
      const answered = await client.callTool({ name: "slow_tool", arguments: {} }, undefined, {
        onprogress: (notification) => progress.push(notification),
      });
      expect(answered.isError).toBeUndefined();
      const [run] = await runsOf(flowId);
      const text = (answered.content as { text: string }[])[0]?.text;
      expect(text).toBe(
        `the run ${run.id} is still running after ${WAIT_MS / 1000} s; follow it with GET /runs/${run.id}`,
      );
      expect(progress[0]).toMatchObject({ progress: 1, message: "starting a run of flow slow_tool" });
      expect(progress.map((notice) => notice.progress)).toEqual(progress.map((_, index) => index + 1));
      expect((await runUntil(api, owner, run.id)).output).toEqual({ done: true });
    }, 30_000);

    test("a call takes the tool as last saved, in every API process: new schemas, a new name, a deleted flow", async () => {
      const requires = (field: string) =>
        tool("changing_tool", { input_schema: { type: "object", required: [field] } });
      const flowId = await toolFlow(owner, requires("a"));
      const peer = await startPeerApi(api);
      try {
        const here = await connect(owner.headers);
        const peerClient = new Client({ name: "peer", version: "1.0.0" });
        await peerClient.connect(
          new StreamableHTTPClientTransport(new URL(`${peer.url}/mcp`), { requestInit: { headers: owner.headers } }),
        );
        clients.push(peerClient);
        // Called once in each process, so each has looked the tool up.
        for (const client of [here, peerClient]) {
          expect((await client.callTool({ name: "changing_tool", arguments: { a: 1 } })).isError).toBeUndefined();
        }
        const save = (mcp: unknown) =>
          call(api, owner, "PUT", `/flows/${flowId}`, { name: "changing", steps: ECHO, mcp });
        expect((await save(requires("b"))).status).toBe(200);
        const refusedFor = async (client: Client, name: string) =>
          (await refusal(client.callTool({ name, arguments: { a: 1 } }))).message;
        expect(await refusedFor(here, "changing_tool")).toContain("arguments.b: is required");
        await eventually(async () =>
          (await refusedFor(peerClient, "changing_tool")).includes("arguments.b: is required"),
        );

        expect((await save({ ...requires("a"), tool: "renamed_tool" })).status).toBe(200);
        expect(await refusedFor(here, "changing_tool")).toContain("unknown tool: changing_tool");
        expect((await here.callTool({ name: "renamed_tool", arguments: { a: 1 } })).isError).toBeUndefined();
        expect((await call(api, owner, "DELETE", `/flows/${flowId}`)).status).toBe(200);
        expect(await refusedFor(here, "renamed_tool")).toContain("unknown tool: renamed_tool");
        await eventually(async () => (await refusedFor(peerClient, "renamed_tool")).includes("unknown tool"));
      } finally {
        await peer.stop();
      }
    });

    test("another account's tools are never listed nor callable, and its tool names are its own", async () => {
      await toolFlow(owner, tool("owners_secret_tool"));
      const client = await connect(stranger.headers);
      expect(await toolNames(client)).not.toContain("owners_secret_tool");
      const refused = await refusal(client.callTool({ name: "owners_secret_tool", arguments: {} }));
      expect(refused.code).toBe(ErrorCode.InvalidParams);
      expect(refused.message).toContain("unknown tool: owners_secret_tool");
      // The name is unique per account: the stranger may have a tool of the same name.
      await toolFlow(stranger, tool("owners_secret_tool"));
      expect(await toolNames(client)).toEqual(["owners_secret_tool"]);
    });

    test("a tool name another flow of the account has is 409 naming mcp.tool; a deleted flow gives its name back", async () => {
      const first = await toolFlow(owner, tool("taken_name"));
      const clash = {
        status: 409,
        body: {
          error: 'mcp.tool: is the tool name of another flow of the account ("taken_name"): choose another',
          problems: [
            {
              path: "mcp.tool",
              message: 'is the tool name of another flow of the account ("taken_name"): choose another',
            },
          ],
        },
      };
      const second = { name: "second", steps: ECHO, mcp: tool("taken_name") };
      expect(await call(api, owner, "POST", "/flows", second)).toMatchObject(clash);
      const other = await toolFlow(owner, tool("other_name"));
      expect(await call(api, owner, "PUT", `/flows/${other}`, second)).toMatchObject(clash);
      // Saving the flow that has the name keeps it.
      expect((await call(api, owner, "PUT", `/flows/${first}`, second)).status).toBe(200);
      const checked = await call(api, owner, "POST", "/flows/validate", second);
      expect(checked.body.data).toEqual({ valid: false, problems: clash.body.problems });

      expect((await call(api, owner, "DELETE", `/flows/${first}`)).status).toBe(200);
      expect((await call(api, owner, "POST", "/flows", second)).status).toBe(200);
    });

    test("an invalid tool is 400 naming the field: its name, its description, a schema that is not an object schema or not JSON Schema", async () => {
      const save = (mcp: unknown) => call(api, owner, "POST", "/flows", { name: "bad tool", steps: ECHO, mcp });
      const cases: [unknown, string][] = [
        [tool("has space"), "mcp.tool"],
        [tool("x".repeat(65)), "mcp.tool"],
        [{ ...tool("no_description"), description: "" }, "mcp.description"],
        [{ tool: "no_schema", description: "d" }, "mcp.input_schema"],
        [tool("array_input", { input_schema: { type: "array" } }), "mcp.input_schema.type"],
        [
          tool("bad_type", { input_schema: { type: "object", properties: { a: { type: "strin" } } } }),
          "mcp.input_schema.properties.a.type",
        ],
        [
          tool("bad_ref", { input_schema: { type: "object", properties: { a: { $ref: "#/$defs/none" } } } }),
          "mcp.input_schema",
        ],
        [
          tool("lookahead", {
            input_schema: { type: "object", properties: { a: { type: "string", pattern: "^(?=a)" } } },
          }),
          "mcp.input_schema",
        ],
        [
          tool("bad_dialect", { input_schema: { $schema: "https://example.com/schema", type: "object" } }),
          "mcp.input_schema.$schema",
        ],
        [tool("output_not_object", { output_schema: { type: "string" } }), "mcp.output_schema.type"],
        [tool("huge", { input_schema: { type: "object", description: "x".repeat(40_000) } }), "mcp.input_schema"],
        [{ ...tool("unknown_field"), extra: 1 }, "mcp"],
      ];
      for (const [mcp, path] of cases) {
        const refused = await save(mcp);
        expect({ mcp, status: refused.status }).toEqual({ mcp, status: 400 });
        expect({ mcp, paths: refused.body.problems.map((problem: { path: string }) => problem.path) }).toEqual({
          mcp,
          paths: expect.arrayContaining([path]),
        });
      }
      // A draft-07 schema, as its $schema says, is taken.
      const draft07 = tool("draft_07", {
        input_schema: { $schema: "http://json-schema.org/draft-07/schema#", type: "object", definitions: {} },
      });
      expect((await save(draft07)).status).toBe(200);
    });
  });
}

const ECHO = [{ name: "echo", node_type: "function", subject: "transform", payload: { ok: true } }];
