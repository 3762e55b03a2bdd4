import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import type { Server } from "bun";
import { sql } from "kysely";
import { type Caller, call, newCaller, runUntil, startRun } from "./context.ts";
import { runModes, startTestApi, type TestApi } from "./harness.ts";

/**
 * Per-flow throttles (issue 19): runs of a flow throttled to 5 starts per 2 seconds per key
 * are given turns at that pace and none calls its upstream before its turn (arrival times
 * alone would also measure how late a loaded machine runs the first ones), none is refused
 * or dropped, and a run waiting shows why.
 */
const LIMIT = 5;
const PERIOD_S = 2;
const KEYS = ["a", "b"];
const RUNS_PER_KEY = 15;
/** The test's clock and the database's are this machine's, read at slightly different moments. */
const CLOCK_SLACK_MS = 50;

for (const { label, backend, redis, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(`throttles on ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;
    let owner: Caller;
    let upstream: Server<undefined>;
    /** When each run's step reached the upstream (epoch ms), by run id. */
    const calls = new Map<string, number>();

    beforeAll(async () => {
      upstream = Bun.serve({
        port: 0,
        hostname: "127.0.0.1",
        fetch(request) {
          const runId = new URL(request.url).pathname.split("/").at(-1) ?? "";
          calls.set(runId, Date.now());
          return Response.json({ runId });
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
            payload: { url: `http://127.0.0.1:${upstream.port}/customer/{{trigger.customer}}/{{run.id}}` },
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
      // The turns the platform gave (its decision, on the database's clock): per key, the
      // turn `limit` places later is at least a period later.
      const turns = await sql<{ id: string; key: string; at: Date }>`
        select id, throttle_key as key, throttle_at as at from runs where flow_id = ${flowId}`.execute(api.services.db);
      expect(turns.rows).toHaveLength(RUNS_PER_KEY * KEYS.length);
      for (const key of KEYS) {
        const times = turns.rows
          .filter((turn) => turn.key === key)
          .map((turn) => turn.at.getTime())
          .sort((a, b) => a - b);
        expect(times).toHaveLength(RUNS_PER_KEY);
        const gaps = times.slice(LIMIT).map((at, i) => at - (times[i] as number));
        expect(Math.min(...gaps)).toBeGreaterThanOrEqual(PERIOD_S * 1000);
      }
      // And no run's step reached the upstream before its turn: the excess waited.
      for (const turn of turns.rows) {
        expect(calls.get(turn.id)).toBeGreaterThanOrEqual(turn.at.getTime() - CLOCK_SLACK_MS);
      }
      // Of a key's turns, the platform keeps the ones a later turn is judged by: the `limit` latest.
      const kept = await sql<{ key: string; seqs: string[] }>`
        select throttle_key as key, array_agg(seq::text order by seq) as seqs from throttle_turns
        where flow_id = ${flowId} group by throttle_key order by throttle_key`.execute(api.services.db);
      const latest = Array.from({ length: LIMIT }, (_, i) => String(RUNS_PER_KEY - LIMIT + 1 + i));
      expect(kept.rows).toEqual(KEYS.map((key) => ({ key, seqs: latest })));
    }, 120_000);

    test("a key of any length works: a run keyed by 10 KB of trigger data gets its turn and ends", async () => {
      const created = await call(api, owner, "POST", "/flows", {
        name: "long keys",
        throttle: { limit: 1, period_s: 60, key: "{{trigger.customer}}" },
        steps: [{ name: "echo", subject: "transform", payload: { customer: "{{trigger.customer}}" } }],
      });
      expect(created.status).toBe(200);
      // Sent by anyone (the flow's webhook is public); random, so PostgreSQL cannot compress it small.
      const customer = randomBytes(7680).toString("base64");
      const ids: string[] = [];
      for (const key of [customer, "short"]) {
        const sent = await call(api, null, "POST", `/webhooks/${created.body.data.webhook.id}`, { customer: key });
        expect(sent.status).toBe(200);
        ids.push(sent.body.run_id);
      }
      const runs = await Promise.all(ids.map((id) => runUntil(api, owner, id)));
      expect(runs.map((run) => ({ status: run.status, error: run.error, output: run.output }))).toEqual([
        { status: "succeeded", error: null, output: { customer } },
        { status: "succeeded", error: null, output: { customer: "short" } },
      ]);
      // A long key is kept as its digest; a short one as it is.
      const keys = await sql<{ key: string }>`
        select throttle_key as key from runs where flow_id = ${created.body.data.id} order by id`.execute(
        api.services.db,
      );
      expect(keys.rows.map((row) => row.key)).toEqual([expect.stringMatching(/^sha256:[0-9a-f]{64}$/), "short"]);
    });

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
