import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type Caller, call, newCaller, runUntil, startRun } from "./context.ts";
import { runModes, startTestApi, type TestApi } from "./harness.ts";

/**
 * Per-flow rate limits (issue 31): of the starts of a key, `limit` per period are taken and
 * run; every other start is still answered with its run id, and ends `skipped` with the reason
 * instead of being queued, so a sender that repeats itself is visible, not silently dropped.
 */
const ended = (run: { status: string }) => run.status !== "queued" && run.status !== "running";

for (const { label, backend, redis, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(`rate limits on ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;
    let owner: Caller;

    beforeAll(async () => {
      api = await startTestApi({ backend, redis, worker: true });
      owner = await newCaller(api, "rate-limit");
    }, 60_000);
    afterAll(async () => {
      await api.stop();
    });

    test("`limit` starts of a key per period run; the others are answered, then skipped with the reason", async () => {
      const created = await call(api, owner, "POST", "/flows", {
        name: "rate limited",
        rate_limit: { limit: 3, period_s: 3600, key: "{{trigger.customer}}" },
        steps: [{ name: "echo", subject: "transform", payload: { customer: "{{trigger.customer}}" } }],
      });
      expect(created.status).toBe(200);
      expect(created.body.data.rate_limit).toEqual({ limit: 3, period_s: 3600, key: "{{trigger.customer}}" });
      const flowId = created.body.data.id;
      const customers = ["a", "a", "a", "a", "a", "b", "b"];
      const started = await Promise.all(customers.map((customer) => startRun(api, owner, flowId, { customer })));
      expect(started.map((answer) => answer.status)).toEqual(customers.map(() => 200));
      const runs = await Promise.all(started.map((answer) => runUntil(api, owner, answer.body.run_id, ended)));
      const outcomes = (customer: string) =>
        runs
          .filter((run) => run.trigger.customer === customer)
          .map((run) => ({ status: run.status, end_reason: run.end_reason }))
          .sort((x, y) => x.status.localeCompare(y.status));
      expect(outcomes("a")).toEqual([
        { status: "skipped", end_reason: 'rate limited: 3 starts per 3600 s for key "a"' },
        { status: "skipped", end_reason: 'rate limited: 3 starts per 3600 s for key "a"' },
        { status: "succeeded", end_reason: null },
        { status: "succeeded", end_reason: null },
        { status: "succeeded", end_reason: null },
      ]);
      expect(outcomes("b")).toEqual([
        { status: "succeeded", end_reason: null },
        { status: "succeeded", end_reason: null },
      ]);
      // A skipped run ran nothing, and shows in the flow's runs by its status.
      const skipped = runs.filter((run) => run.status === "skipped");
      expect(skipped.every((run) => run.steps.length === 0 && run.finished_at !== null)).toBe(true);
      const listed = await call(api, owner, "GET", `/flows/${flowId}/runs?status=skipped`);
      expect(listed.body.data.map((run: { id: string }) => run.id).sort()).toEqual(skipped.map((run) => run.id).sort());
    }, 60_000);

    test("a flow-wide rate limit names no key; a start waiting for its end hears it was skipped", async () => {
      const created = await call(api, owner, "POST", "/flows", {
        name: "one a day",
        rate_limit: { limit: 1, period_s: 86_400 },
        steps: [{ name: "echo", subject: "transform", payload: { ok: true } }],
      });
      const flowId = created.body.data.id;
      const first = await startRun(api, owner, flowId, {}, "?wait=true");
      expect(first).toMatchObject({ status: 200, body: { ok: true } });
      const second = await startRun(api, owner, flowId, {}, "?wait=true");
      expect(second.status).toBe(500);
      expect(second.body.error).toBe("skipped: rate limited: 1 start per 86400 s");
    }, 60_000);

    test("a rate limit is added by an update and shown; a bad one is a 400 naming it", async () => {
      const definition = { name: "later", steps: [{ name: "s", subject: "transform", payload: {} }] };
      const created = await call(api, owner, "POST", "/flows", definition);
      expect(created.body.data).toMatchObject({ rate_limit: null, singleton: null, start_timeout_s: null });
      const updated = await call(api, owner, "PUT", `/flows/${created.body.data.id}`, {
        ...definition,
        rate_limit: { limit: 10, period_s: 60, key: "{{trigger.customer}}" },
      });
      expect(updated).toMatchObject({
        status: 200,
        body: { data: { rate_limit: { limit: 10, period_s: 60, key: "{{trigger.customer}}" } } },
      });
      const read = await call(api, owner, "GET", `/flows/${created.body.data.id}`);
      expect(read.body.data.rate_limit).toEqual({ limit: 10, period_s: 60, key: "{{trigger.customer}}" });
      const bad = await call(api, owner, "POST", "/flows", {
        ...definition,
        rate_limit: { limit: 0, period_s: 86_401 },
      });
      expect(bad).toMatchObject({
        status: 400,
        body: {
          error: "invalid input: rate_limit.limit: must be at least 1; rate_limit.period_s: must be at most 86400",
        },
      });
    });
  });
}
