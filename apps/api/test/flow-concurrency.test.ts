import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { eventually } from "@platform/core/testing";
import type { Server } from "bun";
import { type Caller, call, newCaller, runUntil, startRun } from "./context.ts";
import { runModes, startTestApi, type TestApi } from "./harness.ts";

/**
 * Per-flow concurrency limits (issue 19): 200 runs of a flow limited to 3 at once per key,
 * over 4 keys, never have more than 3 running per key (the upstream each run calls counts
 * the calls in flight per key), and all 200 succeed; a run waiting shows why. The upstream
 * holds every call until the test has seen each key's slots full and the other runs waiting,
 * so that how fast this machine creates runs cannot decide whether a limit was ever reached.
 */
const RUNS = 200;
const KEYS = ["a", "b", "c", "d"];
const LIMIT = 3;

for (const { label, backend, redis, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(`concurrency limits on ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;
    let owner: Caller;
    let upstream: Server<undefined>;
    const inFlight = new Map<string, number>();
    const most = new Map<string, number>();
    let held = Promise.withResolvers<void>();

    beforeAll(async () => {
      upstream = Bun.serve({
        port: 0,
        hostname: "127.0.0.1",
        async fetch(request) {
          const key = new URL(request.url).pathname.split("/").at(-1) ?? "";
          const now = (inFlight.get(key) ?? 0) + 1;
          inFlight.set(key, now);
          most.set(key, Math.max(most.get(key) ?? 0, now));
          await held.promise;
          await Bun.sleep(15);
          inFlight.set(key, (inFlight.get(key) ?? 1) - 1);
          return Response.json({ key });
        },
      });
      api = await startTestApi({ backend, redis, worker: true, env: { HTTP_REQUEST_ALLOWED_NETWORKS: "127.0.0.1" } });
      owner = await newCaller(api, "concurrency");
    }, 60_000);
    afterAll(async () => {
      await api.stop();
      upstream.stop(true);
    });

    test("at most `limit` runs per key execute at once; the others wait, in order, and all succeed", async () => {
      inFlight.clear();
      most.clear();
      held = Promise.withResolvers<void>();
      const created = await call(api, owner, "POST", "/flows", {
        name: "limited",
        concurrency: { limit: LIMIT, key: "{{trigger.customer}}" },
        steps: [
          {
            name: "call",
            subject: "http.request",
            payload: { url: `http://127.0.0.1:${upstream.port}/customer/{{trigger.customer}}` },
          },
        ],
      });
      expect(created.status).toBe(200);
      expect(created.body.data.concurrency).toEqual({ limit: LIMIT, key: "{{trigger.customer}}" });
      const flowId = created.body.data.id;
      const ids: string[] = [];
      for (let from = 0; from < RUNS; from += 50) {
        const started = await Promise.all(
          Array.from({ length: 50 }, (_, i) =>
            startRun(api, owner, flowId, { customer: KEYS[(from + i) % KEYS.length] }),
          ),
        );
        for (const answer of started) ids.push(answer.body.run_id);
      }
      // Every key's slots fill, and a run waiting for one says so.
      const reasons = new Set<string | null>();
      await eventually(async () => {
        const waiting = await call(api, owner, "GET", `/flows/${flowId}/runs?status=queued&limit=100`);
        for (const run of waiting.body.data as { queue_reason: string | null }[]) reasons.add(run.queue_reason);
        return KEYS.every((key) => inFlight.get(key) === LIMIT) && reasons.has("waiting for concurrency slot");
      }, 60_000);
      held.resolve();
      const runs = await Promise.all(ids.map((id) => runUntil(api, owner, id)));
      expect(runs.filter((run) => run.status !== "succeeded")).toEqual([]);
      for (const key of KEYS) expect(most.get(key)).toBeLessThanOrEqual(LIMIT);
      expect([...most.values()].some((n) => n === LIMIT)).toBe(true);
      expect(runs.every((run) => run.queue_reason === null)).toBe(true);
      expect([...reasons].filter(Boolean)).toEqual(["waiting for concurrency slot"]);
    }, 120_000);

    test("cancelling the run that holds the only slot hands it to the run waiting, at once", async () => {
      held = Promise.withResolvers<void>();
      const created = await call(api, owner, "POST", "/flows", {
        name: "one at a time",
        concurrency: { limit: 1 },
        steps: [
          { name: "call", subject: "http.request", payload: { url: `http://127.0.0.1:${upstream.port}/one/alone` } },
        ],
      });
      const flowId = created.body.data.id;
      const first = (await startRun(api, owner, flowId, {})).body.run_id;
      await eventually(() => inFlight.get("alone") === 1, 10_000);
      const second = (await startRun(api, owner, flowId, {})).body.run_id;
      await eventually(
        async () =>
          (await call(api, owner, "GET", `/runs/${second}`)).body.queue_reason === "waiting for concurrency slot",
        10_000,
      );
      expect((await call(api, owner, "POST", `/runs/${first}/cancel`)).body.status).toBe("cancelled");
      // Well before the 30 s after which a waiting run looks for a slot again by itself.
      await eventually(() => inFlight.get("alone") === 2, 10_000);
      held.resolve();
      expect((await runUntil(api, owner, second)).status).toBe("succeeded");
      expect((await call(api, owner, "GET", `/runs/${first}`)).body.status).toBe("cancelled");
    }, 60_000);

    test("a key of any length works: a run keyed by 10 KB of trigger data gets its slot and ends", async () => {
      const created = await call(api, owner, "POST", "/flows", {
        name: "long keys",
        concurrency: { limit: 1, key: "{{trigger.customer}}" },
        steps: [{ name: "echo", subject: "transform", payload: { customer: "{{trigger.customer}}" } }],
      });
      expect(created.status).toBe(200);
      // Sent by anyone (the flow's webhook is public); random, so PostgreSQL cannot compress it small.
      const customer = randomBytes(7680).toString("base64");
      const sent = await call(api, null, "POST", `/webhooks/${created.body.data.webhook.id}`, { customer });
      expect(sent.status).toBe(200);
      const run = await runUntil(api, owner, sent.body.run_id);
      expect({ status: run.status, error: run.error, output: run.output }).toEqual({
        status: "succeeded",
        error: null,
        output: { customer },
      });
    });

    test("a bad limit is a 400 naming it", async () => {
      const answer = await call(api, owner, "POST", "/flows", {
        name: "bad",
        concurrency: { limit: 0, key: "customer" },
        steps: [{ name: "s", subject: "transform", payload: {} }],
      });
      expect(answer).toMatchObject({
        status: 400,
        body: {
          error:
            "invalid input: concurrency.limit: must be at least 1; concurrency.key: must hold a template: {{ expression }}",
        },
      });
    });
  });
}
