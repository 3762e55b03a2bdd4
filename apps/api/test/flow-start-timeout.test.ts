import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type Caller, call, newCaller, runUntil, startRun } from "./context.ts";
import { runModes, startTestApi, type TestApi } from "./harness.ts";

/**
 * Per-flow start timeouts (issue 31): a run still waiting to start `start_timeout_s` after it
 * was accepted ends `cancelled` with the reason, and one waiting on a flow control is woken
 * for it by then: a throttle whose next turn is an hour away would otherwise hold it an hour.
 */
const ended = (run: { status: string }) => run.status !== "queued" && run.status !== "running";

for (const { label, backend, redis, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(`start timeouts on ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;
    let owner: Caller;

    beforeAll(async () => {
      api = await startTestApi({ backend, redis, worker: true });
      owner = await newCaller(api, "start-timeout");
    }, 60_000);
    afterAll(async () => {
      await api.stop();
    });

    test("a run waiting on a throttle past its start timeout is cancelled then, with the reason", async () => {
      const created = await call(api, owner, "POST", "/flows", {
        name: "fresh events only",
        start_timeout_s: 2,
        throttle: { limit: 1, period_s: 3600 },
        steps: [{ name: "echo", subject: "transform", payload: { n: "{{trigger.n}}" } }],
      });
      expect(created.status).toBe(200);
      expect(created.body.data.start_timeout_s).toBe(2);
      const flowId = created.body.data.id;
      const first = await startRun(api, owner, flowId, { n: 1 });
      expect((await runUntil(api, owner, first.body.run_id)).status).toBe("succeeded");
      // The throttle's next turn is an hour away: the second start waits for it, until its deadline.
      const second = await startRun(api, owner, flowId, { n: 2 });
      expect(second.status).toBe(200);
      const waiting = await runUntil(api, owner, second.body.run_id, (run) => run.queue_reason !== null || ended(run));
      expect(waiting.queue_reason).toBe("waiting for throttle window");
      const cancelled = await runUntil(api, owner, second.body.run_id, ended);
      expect(cancelled).toMatchObject({
        status: "cancelled",
        end_reason: "waited more than 2 s to start (start_timeout_s)",
        queue_reason: null,
        started_at: null,
        steps: [],
      });
    }, 60_000);

    test("a start timeout is shown on the flow and removed by an update; a bad one is a 400 naming it", async () => {
      const definition = { name: "later", steps: [{ name: "s", subject: "transform", payload: {} }] };
      const created = await call(api, owner, "POST", "/flows", { ...definition, start_timeout_s: 600 });
      expect(created.body.data.start_timeout_s).toBe(600);
      const updated = await call(api, owner, "PUT", `/flows/${created.body.data.id}`, definition);
      expect(updated).toMatchObject({ status: 200, body: { data: { start_timeout_s: null } } });
      const bad = await call(api, owner, "POST", "/flows", { ...definition, start_timeout_s: 0.5 });
      expect(bad).toMatchObject({
        status: 400,
        body: { error: "invalid input: start_timeout_s: must be a whole number of seconds" },
      });
      const text = await call(api, owner, "POST", "/flows", { ...definition, start_timeout_s: "soon" });
      expect(text).toMatchObject({
        status: 400,
        body: { error: "invalid input: start_timeout_s: must be a whole number of seconds" },
      });
    });
  });
}
