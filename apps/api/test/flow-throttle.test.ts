import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Server } from "bun";
import { type Caller, call, newCaller, runUntil, startRun } from "./context.ts";
import { runModes, startTestApi, type TestApi } from "./harness.ts";

/**
 * Per-flow throttles (issue 19): runs of a flow throttled to 5 starts per 2 seconds per key
 * start at that pace (the upstream each run calls records when each key's calls arrive),
 * none is refused or dropped, and a run waiting shows why.
 */
const LIMIT = 5;
const PERIOD_S = 2;
const KEYS = ["a", "b"];
const RUNS_PER_KEY = 15;
/** How much later than its turn a run's step may reach the upstream: the waker looks once a second. */
const JITTER_MS = 300;

for (const { label, backend, redis, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(`throttles on ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;
    let owner: Caller;
    let upstream: Server<undefined>;
    const calls = new Map<string, number[]>();

    beforeAll(async () => {
      upstream = Bun.serve({
        port: 0,
        hostname: "127.0.0.1",
        fetch(request) {
          const key = new URL(request.url).pathname.split("/").at(-1) ?? "";
          calls.set(key, [...(calls.get(key) ?? []), performance.now()]);
          return Response.json({ key });
        },
      });
      api = await startTestApi({ backend, redis, worker: true, env: { HTTP_REQUEST_ALLOWED_NETWORKS: "127.0.0.1" } });
      owner = await newCaller(api, "throttle");
    }, 60_000);
    afterAll(async () => {
      await api.stop();
      upstream.stop(true);
    });

    test("at most `limit` runs per key start in a period; the excess waits and starts as the window allows", async () => {
      const created = await call(api, owner, "POST", "/flows", {
        name: "throttled",
        throttle: { limit: LIMIT, period_s: PERIOD_S, key: "{{trigger.customer}}" },
        steps: [
          {
            name: "call",
            subject: "http.request",
            payload: { url: `http://127.0.0.1:${upstream.port}/customer/{{trigger.customer}}` },
          },
        ],
      });
      expect(created.status).toBe(200);
      expect(created.body.data.throttle).toEqual({ limit: LIMIT, period_s: PERIOD_S, key: "{{trigger.customer}}" });
      expect(created.body.data.concurrency).toBeNull();
      const flowId = created.body.data.id;
      const started = await Promise.all(
        Array.from({ length: RUNS_PER_KEY * KEYS.length }, (_, i) =>
          startRun(api, owner, flowId, { customer: KEYS[i % KEYS.length] }),
        ),
      );
      await Bun.sleep(500);
      const waiting = await call(api, owner, "GET", `/flows/${flowId}/runs?status=queued&limit=100`);
      const reasons = new Set(waiting.body.data.map((run: { queue_reason: string | null }) => run.queue_reason));
      expect([...reasons]).toEqual(["waiting for throttle window"]);
      const runs = await Promise.all(started.map((answer) => runUntil(api, owner, answer.body.run_id)));
      expect(runs.filter((run) => run.status !== "succeeded")).toEqual([]);
      expect(runs.every((run) => run.queue_reason === null)).toBe(true);
      for (const key of KEYS) {
        const times = calls.get(key) ?? [];
        expect(times).toHaveLength(RUNS_PER_KEY);
        // The call `limit` later is at least a period later (less the jitter of its start).
        const gaps = times.slice(LIMIT).map((at, i) => at - (times[i] as number));
        expect(Math.min(...gaps)).toBeGreaterThanOrEqual(PERIOD_S * 1000 - JITTER_MS);
      }
    }, 120_000);

    test("a throttle is added by an update and shown; a bad one is a 400 naming it", async () => {
      const definition = { name: "later", steps: [{ name: "s", subject: "transform", payload: {} }] };
      const created = await call(api, owner, "POST", "/flows", definition);
      expect(created.body.data.throttle).toBeNull();
      const updated = await call(api, owner, "PUT", `/flows/${created.body.data.id}`, {
        ...definition,
        throttle: { limit: 100, period_s: 60 },
      });
      expect(updated).toMatchObject({ status: 200, body: { data: { throttle: { limit: 100, period_s: 60 } } } });
      const bad = await call(api, owner, "POST", "/flows", { ...definition, throttle: { limit: 0, period_s: 86_401 } });
      expect(bad).toMatchObject({
        status: 400,
        body: { error: "invalid input: throttle.limit: must be at least 1; throttle.period_s: must be at most 86400" },
      });
    });
  });
}
