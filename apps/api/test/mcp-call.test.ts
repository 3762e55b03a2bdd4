import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type Caller, call, createFlow, newCaller, runUntil, startRun, type TestStep } from "./context.ts";
import { runModes, startTestApi, type TestApi } from "./harness.ts";
import { invalidInput } from "./invalid-input.ts";
import { type McpUpstream, startMcpUpstream } from "./mcp-upstream.ts";
import { type StandInRegistry, startStandInRegistry } from "./registry-upstream.ts";

/**
 * `mcp.call` steps in real runs against a remote MCP server (the SDK's own `McpServer` on a
 * local port, reachable because 127.0.0.1 is listed in HTTP_REQUEST_ALLOWED_NETWORKS), and
 * the check of their arguments when a flow is saved.
 */
for (const { label, backend, redis, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(`mcp.call steps on ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;
    let owner: Caller;
    let upstream: McpUpstream;
    let registry: StandInRegistry;
    beforeAll(async () => {
      upstream = startMcpUpstream();
      registry = await startStandInRegistry();
      api = await startTestApi({
        backend,
        redis,
        worker: true,
        env: {
          HTTP_REQUEST_ALLOWED_NETWORKS: "127.0.0.1",
          WAIT_TIMEOUT_MS: "20000",
          MCP_REGISTRY_URL: registry.url,
        },
      });
      owner = await newCaller(api, "mcp-call");
    }, 60_000);
    afterAll(async () => {
      await api?.stop();
      upstream?.stop();
      await registry?.stop();
    });

    const mcpStep = (payload: Record<string, unknown>, options?: TestStep["options"]): TestStep => ({
      name: "tool",
      subject: "mcp.call",
      payload: { server: upstream.url, ...payload },
      ...(options ? { options } : {}),
    });
    const runOf = async (caller: Caller, steps: TestStep[], trigger: unknown = {}) => {
      const flowId = await createFlow(api, caller, steps);
      return runUntil(api, caller, (await startRun(api, caller, flowId, trigger)).body.run_id);
    };
    const saveFlow = (steps: TestStep[]) =>
      call(api, owner, "POST", "/flows", {
        name: "mcp flow",
        steps: steps.map((step) => ({ node_type: "function", ...step })),
      });
    const calls = (tool: string) => upstream.calls.get(tool) ?? 0;

    test("a tool's structured content is the step's output; arguments come from templates", async () => {
      const run = await runOf(owner, [mcpStep({ tool: "add", arguments: { a: "{{trigger.a}}", b: 2 } })], { a: 40 });
      expect(run.status).toBe("succeeded");
      expect(run.output).toEqual({ sum: 42 });
    });

    test("a tool that answers text only: its content is the output", async () => {
      const run = await runOf(owner, [mcpStep({ tool: "shout", arguments: { text: "hello" } })]);
      expect(run.status).toBe("succeeded");
      expect(run.output).toEqual([{ type: "text", text: "HELLO" }]);
    });

    test("a server that keeps sessions has each step's session ended after its call", async () => {
      const run = await runOf(owner, [
        {
          name: "sum",
          subject: "mcp.call",
          payload: { server: upstream.sessionsUrl, tool: "add", arguments: { a: 1, b: 2 } },
        },
        { name: "refused", subject: "mcp.call", payload: { server: upstream.sessionsUrl, tool: "refuse" } },
      ]);
      expect(run.status).toBe("failed");
      expect(run.steps[0].output).toEqual({ sum: 3 });
      // The save's tool list, the call and the failed call: every session ended.
      expect(upstream.openSessions()).toBe(0);
      const late = await runOf(owner, [
        {
          name: "late",
          subject: "mcp.call",
          payload: { server: upstream.sessionsUrl, tool: "slow", arguments: { ms: 3000 } },
          options: { timeout: 300 },
        },
      ]);
      expect(late.error).toBe('step "late" failed: timed out after 300 ms');
      // A timed-out call's session is ended too (the step does not wait for it to end).
      for (let waited = 0; upstream.openSessions() > 0 && waited < 5000; waited += 20) await Bun.sleep(20);
      expect(upstream.openSessions()).toBe(0);
    });

    test("isError fails the step with the tool's text, at once; a secret in the headers is redacted from it", async () => {
      const secret = `tok_${crypto.randomUUID()}`;
      const put = await api.request("/secrets/mcp_token", {
        method: "PUT",
        headers: owner.headers,
        json: { value: secret },
      });
      expect(put.status).toBeLessThan(300);
      const before = calls("refuse");
      const run = await runOf(owner, [
        mcpStep(
          { tool: "refuse", headers: { authorization: "Bearer {{secrets.mcp_token}}" } },
          { attempts: 3, backoff_ms: 50 },
        ),
      ]);
      expect(run.status).toBe("failed");
      expect(run.error).toStartWith('step "tool" failed: mcp.call: tool "refuse" failed: order refused for Bearer ');
      expect(JSON.stringify(run)).not.toContain(secret);
      // The tool answered: another attempt would be answered the same.
      expect(run.steps[0].attempts).toHaveLength(1);
      expect(calls("refuse")).toBe(before + 1);
    });

    test("an attempt past options.timeout fails with the limit, and is retried as the options say", async () => {
      const before = calls("slow");
      const run = await runOf(owner, [
        mcpStep({ tool: "slow", arguments: { ms: 5000 } }, { timeout: 400, attempts: 2, backoff_ms: 50 }),
      ]);
      expect(run).toMatchObject({ status: "failed", error: 'step "tool" failed: timed out after 400 ms' });
      expect(run.steps[0].attempts).toHaveLength(2);
      expect(calls("slow")).toBe(before + 2);
    });

    test("a server that dies during a call fails the attempt; the next attempt, once it is back, succeeds", async () => {
      const dying = startMcpUpstream();
      try {
        const flowId = await createFlow(api, owner, [
          {
            name: "tool",
            subject: "mcp.call",
            payload: { server: dying.url, tool: "slow", arguments: { ms: 1500 } },
            options: { timeout: 10_000, attempts: 2, backoff_ms: 300 },
          },
        ]);
        const runId = (await startRun(api, owner, flowId, {})).body.run_id;
        while ((dying.calls.get("slow") ?? 0) === 0) await Bun.sleep(10);
        dying.die();
        dying.revive();
        const run = await runUntil(api, owner, runId);
        expect(run.status).toBe("succeeded");
        expect(run.output).toEqual({ slept: 1500 });
        expect(run.steps[0].attempts).toHaveLength(2);
        expect(run.steps[0].attempts[0].error).toStartWith(`mcp.call: ${dying.url} failed: `);
        expect(dying.calls.get("slow")).toBe(2);
      } finally {
        dying.stop();
      }
    });

    test("a server that dies during a call and stays down fails the step after its attempts", async () => {
      const dying = startMcpUpstream();
      try {
        const flowId = await createFlow(api, owner, [
          {
            name: "tool",
            subject: "mcp.call",
            payload: { server: dying.url, tool: "slow", arguments: { ms: 1500 } },
            options: { timeout: 10_000, attempts: 2, backoff_ms: 100 },
          },
        ]);
        const runId = (await startRun(api, owner, flowId, {})).body.run_id;
        while ((dying.calls.get("slow") ?? 0) === 0) await Bun.sleep(10);
        dying.die();
        const run = await runUntil(api, owner, runId);
        expect(run.status).toBe("failed");
        expect(run.error).toStartWith(`step "tool" failed: mcp.call: ${dying.url} failed: `);
        expect(run.steps[0].attempts).toHaveLength(2);
        expect(dying.calls.get("slow")).toBe(1);
      } finally {
        dying.stop();
      }
    });

    test("at save, static arguments that do not fit the tool's input schema are a 400 naming the field", async () => {
      const saved = await saveFlow([mcpStep({ tool: "add", arguments: { a: "one", b: 2 } })]);
      expect(saved.status).toBe(400);
      expect(saved.body).toEqual(
        invalidInput(["steps.0.payload.arguments.a", 'must be number (input schema of tool "add")']),
      );
      const missing = await saveFlow([mcpStep({ tool: "add", arguments: { a: 1 } })]);
      expect(missing.status).toBe(400);
      expect(missing.body).toEqual(
        invalidInput(["steps.0.payload.arguments.b", 'is required by the tool (input schema of tool "add")']),
      );
    });

    test("at save, an unknown tool is a 400 naming the step's tool field and the server's tools", async () => {
      const saved = await saveFlow([mcpStep({ tool: "subtract", arguments: {} })]);
      expect(saved.status).toBe(400);
      expect(saved.body.problems).toEqual([
        {
          path: "steps.0.payload.tool",
          message: `${upstream.url} has no tool "subtract" (its tools: add, shout, refuse, slow, hold)`,
        },
      ]);
    });

    test("at save, arguments with templates are left to the run; at run, arguments that do not fit fail the step without a call", async () => {
      const lists = upstream.lists();
      const before = calls("add");
      const flowId = await createFlow(api, owner, [mcpStep({ tool: "add", arguments: { a: "{{trigger.a}}", b: 2 } })]);
      const run = await runUntil(api, owner, (await startRun(api, owner, flowId, { a: "forty" })).body.run_id);
      expect(run.status).toBe("failed");
      expect(run.error).toBe(
        'step "tool" failed: mcp.call: the arguments do not fit the input schema of tool "add": arguments.a must be number',
      );
      expect(calls("add")).toBe(before);
      // The list read at save (or earlier, within the minute) served the run.
      expect(upstream.lists()).toBeLessThanOrEqual(lists + 1);
    });

    test("a server that does not answer at save is no reason to refuse the flow; its run fails", async () => {
      const gone = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("") });
      const url = `http://127.0.0.1:${gone.port}/mcp`;
      gone.stop(true);
      const saved = await saveFlow([
        { ...mcpStep({ tool: "add", arguments: { a: "x" } }), payload: { server: url, tool: "add" } },
      ]);
      expect(saved.status).toBe(200);
      const run = await runUntil(api, owner, (await startRun(api, owner, saved.body.data.id, {})).body.run_id);
      expect(run.status).toBe("failed");
      expect(run.error).toStartWith(`step "tool" failed: mcp.call: ${url} failed: `);
    });

    test("the address guard refuses a private address as http.request's does: at once, without retrying", async () => {
      const url = `http://127.0.0.2:${upstream.port}/mcp`;
      const saved = await saveFlow([
        {
          name: "tool",
          subject: "mcp.call",
          payload: { server: url, tool: "add", arguments: { a: 1, b: 2 } },
          options: { attempts: 3 },
        },
      ]);
      expect(saved.status).toBe(200);
      const run = await runUntil(api, owner, (await startRun(api, owner, saved.body.data.id, {})).body.run_id);
      expect(run.status).toBe("failed");
      expect(run.error).toBe(
        'step "tool" failed: mcp.call: refused 127.0.0.2 (loopback 127.0.0.0/8): flows may not reach private, loopback, link-local or metadata addresses (ALLOW_PRIVATE_NETWORK)',
      );
      expect(run.steps[0].attempts).toHaveLength(1);
    });

    test("a registry server is called at its streamable-http remote; one without such a remote fails clearly", async () => {
      const name = `io.example/tools-${crypto.randomUUID().slice(0, 8)}`;
      registry.publish({
        name,
        version: "1.0.0",
        description: "test tools",
        remotes: [{ type: "streamable-http", url: upstream.url }],
      });
      const packaged = `${name}-packaged`;
      registry.publish({
        name: packaged,
        version: "1.0.0",
        description: "no remote",
        remotes: [{ type: "sse", url: upstream.url }],
      });
      await api.services.registry.sync.run();
      const run = await runOf(owner, [
        {
          name: "tool",
          subject: "mcp.call",
          payload: { server: { registry: name }, tool: "add", arguments: { a: 1, b: 1 } },
        },
      ]);
      expect(run.status).toBe("succeeded");
      expect(run.output).toEqual({ sum: 2 });
      const none = await runOf(owner, [
        {
          name: "tool",
          subject: "mcp.call",
          payload: { server: { registry: packaged }, tool: "add", arguments: { a: 1, b: 1 } },
        },
      ]);
      expect(none.status).toBe("failed");
      expect(none.error).toBe(
        `step "tool" failed: mcp.call: registry server "${packaged}" (version 1.0.0) has no streamable-http remote to call`,
      );
      const unknown = await runOf(owner, [
        { name: "tool", subject: "mcp.call", payload: { server: { registry: "io.example/nowhere" }, tool: "add" } },
      ]);
      expect(unknown.error).toBe(
        'step "tool" failed: mcp.call: no server "io.example/nowhere" in the MCP registry mirror',
      );
    });

    test("tool lists are kept per account and credentials: another account, or other headers, reads its own", async () => {
      const other = await newCaller(api, "mcp-call-other");
      const step = (headers: Record<string, string>) =>
        mcpStep({ tool: "add", arguments: { a: 1, b: 2 }, headers: { "x-tenant": "{{trigger.t}}", ...headers } });
      const lists = upstream.lists();
      // Headers with templates other than secrets are known only at run: the save asks nothing.
      await createFlow(api, owner, [step({})]);
      expect(upstream.lists()).toBe(lists);
      const keyed = (caller: Caller, key: string) =>
        createFlow(api, caller, [mcpStep({ tool: "add", arguments: { a: 1, b: 2 }, headers: { "x-api-key": key } })]);
      await keyed(owner, "k1");
      expect(upstream.lists()).toBe(lists + 1);
      // Two steps of one save naming the same server and credentials: one list.
      await createFlow(api, owner, [
        { ...mcpStep({ tool: "add", arguments: { a: 1, b: 2 }, headers: { "x-api-key": "k3" } }), name: "one" },
        { ...mcpStep({ tool: "shout", arguments: { text: "hi" }, headers: { "x-api-key": "k3" } }), name: "two" },
      ]);
      expect(upstream.lists()).toBe(lists + 2);
      await keyed(owner, "k1");
      expect(upstream.lists()).toBe(lists + 2);
      await keyed(owner, "k2");
      expect(upstream.lists()).toBe(lists + 3);
      await keyed(other, "k1");
      expect(upstream.lists()).toBe(lists + 4);
    });

    test("the guard applies to a registry server's remote too", async () => {
      const name = `io.example/private-${crypto.randomUUID().slice(0, 8)}`;
      registry.publish({
        name,
        version: "1.0.0",
        description: "a remote on a private address",
        remotes: [{ type: "streamable-http", url: `http://10.0.0.1:${upstream.port}/mcp` }],
      });
      await api.services.registry.sync.run();
      const run = await runOf(owner, [
        {
          name: "tool",
          subject: "mcp.call",
          payload: { server: { registry: name }, tool: "add" },
          options: { attempts: 3 },
        },
      ]);
      expect(run.status).toBe("failed");
      expect(run.error).toBe(
        'step "tool" failed: mcp.call: refused 10.0.0.1 (private 10.0.0.0/8): flows may not reach private, loopback, link-local or metadata addresses (ALLOW_PRIVATE_NETWORK)',
      );
      expect(run.steps[0].attempts).toHaveLength(1);
    });

    test("a payload without server or tool is refused at save", async () => {
      const saved = await call(api, owner, "POST", "/flows", {
        name: "mcp flow",
        steps: [{ name: "tool", node_type: "function", subject: "mcp.call", payload: { arguments: {} } }],
      });
      expect(saved.status).toBe(400);
      expect(saved.body.problems).toEqual([
        { path: "steps.0.payload.server", message: "is required by mcp.call" },
        { path: "steps.0.payload.tool", message: "is required by mcp.call" },
      ]);
      const ftp = await saveFlow([
        { name: "tool", subject: "mcp.call", payload: { server: "ftp://example.com/", tool: "add" } },
      ]);
      expect(ftp.status).toBe(400);
      expect(ftp.body.problems).toEqual([
        { path: "steps.0.payload.server", message: "must be an absolute http:// or https:// URL" },
      ]);
    });
  });
}
