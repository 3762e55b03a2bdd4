import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type Caller, newCaller } from "./context.ts";
import { flowsClient } from "./flows-helpers.ts";
import { createGateway, mapRoute } from "./gateway-helpers.ts";
import { runModes, startTestApi, type TestApi } from "./harness.ts";

/**
 * Bun closes a connection silent for its idle timeout even while the handler still works on
 * the answer (Bun 1.4 does so for requests without a body: a gateway's GET, a start by hand
 * or a webhook sent empty). Every request that waits for a run holds its connection open for
 * its wait, so the caller gets what the wait promises (here the answer of a run still queued
 * when the wait is over) instead of a reset connection. The server's idle timeout is 1 s here
 * (Bun closes a silent connection at its next 4-second tick), the wait 5 s; no worker takes
 * the runs.
 */

const IDLE_S = 1;
const WAIT_MS = 5000;

/** A flow no process runs in place: its run stays queued without a worker. */
const PARKING = [{ name: "pause", subject: "delay", payload: { ms: 60_000 } }];

for (const { label, backend, redis, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(`waiting requests on ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;
    let owner: Caller;

    beforeAll(async () => {
      api = await startTestApi({
        backend,
        redis,
        idleTimeoutSeconds: IDLE_S,
        env: { WAIT_TIMEOUT_MS: String(WAIT_MS) },
      });
      owner = await newCaller(api, "held-open");
    }, 60_000);
    afterAll(() => api.stop());

    const flow = (body: Record<string, unknown>) =>
      flowsClient(api, owner.headers).created({ name: "waits", steps: PARKING, ...body });

    /** What a request answered, or how its connection failed. */
    async function answer(path: string, init: RequestInit & { json?: unknown }) {
      try {
        const response = await api.request(path, { method: "POST", ...init });
        return { status: response.status, body: await response.json() };
      } catch (error) {
        return { failed: (error as { code?: string }).code ?? String(error) };
      }
    }

    test("wait mode, a waiting webhook, a gateway, a tRPC start and an MCP call each answer after their wait, their connection kept", async () => {
      const byHand = await flow({});
      const webhook = await flow({ trigger: { type: "webhook", response_mode: "wait" } });
      await flow({ mcp: { tool: "park", description: "parks", input_schema: { type: "object" } } });
      const topic = await createGateway(api, owner.headers, { timeout: WAIT_MS });
      await mapRoute(api, owner.headers, topic, "GET", "/park", byHand.id);

      const answers = await Promise.all([
        answer(`/flows/${byHand.id}/runs?wait=true`, { headers: owner.headers }),
        answer(`/webhooks/${webhook.webhook.id}`, {}),
        answer(`/gw/${topic}/park`, { method: "GET" }),
        answer("/trpc/runs.start", { headers: owner.headers, json: { flow_id: byHand.id, wait: true } }),
        answer("/mcp", {
          headers: { ...owner.headers, accept: "application/json, text/event-stream" },
          json: { jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "park", arguments: {} } },
        }),
      ]);

      const runId = expect.stringMatching(/^[0-9a-f-]{36}$/);
      expect(answers).toEqual([
        { status: 202, body: { run_id: runId } },
        { status: 202, body: { run_id: runId } },
        { status: 504, body: { error: `the flow did not finish within ${WAIT_MS} ms`, run_id: runId } },
        { status: 200, body: { result: { data: { status: "timeout", run_id: runId } } } },
        {
          status: 200,
          body: {
            jsonrpc: "2.0",
            id: 7,
            result: expect.objectContaining({
              content: [{ type: "text", text: expect.stringContaining("is still running after 5 s") }],
            }),
          },
        },
      ]);
    }, 30_000);
  });
}
