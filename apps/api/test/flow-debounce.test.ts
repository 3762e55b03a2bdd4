import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Server } from "bun";
import { type Caller, call, newCaller, runUntil, startRun } from "./context.ts";
import { runModes, startTestApi, type TestApi } from "./harness.ts";

/**
 * Debounce (issue 31): a burst of starts of one key runs once, with its last start's data;
 * the others end `skipped`, pointed at the run that ran in their place; `timeout_s` bounds how
 * long a stream with no quiet postpones a run; a waiting run says why; and the debounced run
 * still waits for its slot under a concurrency limit.
 */
const ENDED = new Set(["succeeded", "failed", "skipped", "cancelled"]);
const ended = (run: { status: string }) => ENDED.has(run.status);
const REPLACED = "replaced by a later start under the debounce";

/** Runs of a flow, oldest first. */
async function runsOf(api: TestApi, owner: Caller, flowId: string) {
  const listed = await call(api, owner, "GET", `/flows/${flowId}/runs?limit=100`);
  expect(listed.status).toBe(200);
  return (listed.body.data as { id: string }[]).map((run) => run.id).reverse();
}

for (const { label, backend, redis, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(`debounce on ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;
    let owner: Caller;
    let upstream: Server<undefined>;
    /** Requests the upstream holds right now, and the most it held at once. */
    let inFlight = 0;
    let mostInFlight = 0;

    beforeAll(async () => {
      upstream = Bun.serve({
        port: 0,
        hostname: "127.0.0.1",
        async fetch() {
          inFlight++;
          mostInFlight = Math.max(mostInFlight, inFlight);
          await Bun.sleep(200);
          inFlight--;
          return Response.json({ ok: true });
        },
      });
      api = await startTestApi({ backend, redis, worker: true, env: { HTTP_REQUEST_ALLOWED_NETWORKS: "127.0.0.1" } });
      owner = await newCaller(api, "debounce");
    }, 60_000);
    afterAll(async () => {
      await api.stop();
      upstream.stop(true);
    });

    const echo = [{ name: "echo", subject: "transform", payload: { n: "{{trigger.n}}" } }];

    test("a burst of starts of one key runs once, with the last one's data; the others are skipped, pointing at it", async () => {
      const created = await call(api, owner, "POST", "/flows", {
        name: "debounced",
        debounce: { period_s: 4, key: "{{trigger.customer}}" },
        steps: echo,
      });
      expect(created.status).toBe(200);
      expect(created.body.data.debounce).toEqual({ period_s: 4, key: "{{trigger.customer}}" });
      const flowId = created.body.data.id;
      // One after another: each start is answered its own run at once.
      const ids: Record<string, string[]> = { a: [], b: [] };
      for (let n = 0; n < 8; n++) {
        const customer = n % 4 === 3 ? "b" : "a";
        const started = await startRun(api, owner, flowId, { customer, n });
        expect(started.status).toBe(200);
        ids[customer]?.push(started.body.run_id);
      }
      for (const [customer, lastN] of [
        ["a", 6],
        ["b", 7],
      ] as const) {
        // The run that ran first: the ones it replaced are pointed at it once it goes.
        const last = await runUntil(api, owner, (ids[customer] ?? []).at(-1) as string, ended);
        const runs = await Promise.all((ids[customer] ?? []).map((id) => runUntil(api, owner, id, ended)));
        expect(last).toMatchObject({ status: "succeeded", output: { n: lastN }, end_reason: null, taken_by: null });
        expect(
          runs.slice(0, -1).map((run) => ({ status: run.status, end_reason: run.end_reason, taken_by: run.taken_by })),
        ).toEqual(runs.slice(0, -1).map(() => ({ status: "skipped", end_reason: REPLACED, taken_by: last.id })));
      }
    }, 60_000);

    test("a waiting run says why; a later start of its key replaces it", async () => {
      const created = await call(api, owner, "POST", "/flows", {
        name: "long quiet",
        debounce: { period_s: 600 },
        steps: echo,
      });
      const flowId = created.body.data.id;
      const first = await startRun(api, owner, flowId, { n: 1 });
      const waiting = await runUntil(api, owner, first.body.run_id, (run) => run.queue_reason !== null);
      expect(waiting).toMatchObject({ status: "queued", queue_reason: "waiting for debounce period" });
      const second = await startRun(api, owner, flowId, { n: 2 });
      const replaced = await runUntil(api, owner, first.body.run_id, ended);
      expect(replaced).toMatchObject({ status: "skipped", end_reason: REPLACED, taken_by: second.body.run_id });
      expect(replaced.finished_at).not.toBeNull();
      const next = await runUntil(api, owner, second.body.run_id, (run) => run.queue_reason !== null);
      expect(next).toMatchObject({ status: "queued", queue_reason: "waiting for debounce period" });
    });

    test("timeout_s bounds a stream with no quiet: a run goes while the starts go on", async () => {
      const created = await call(api, owner, "POST", "/flows", {
        name: "stream",
        debounce: { period_s: 3, timeout_s: 4 },
        steps: echo,
      });
      expect(created.body.data.debounce).toEqual({ period_s: 3, timeout_s: 4 });
      const flowId = created.body.data.id;
      // A start every 200 ms, far within the period, until a run has gone (bounded: a hang, not a timing).
      const sent: string[] = [];
      let ran: string | undefined;
      for (let n = 0; ran === undefined && n < 250; n++) {
        const started = await startRun(api, owner, flowId, { n });
        sent.push(started.body.run_id);
        const succeeded = await call(api, owner, "GET", `/flows/${flowId}/runs?status=succeeded&limit=1`);
        ran = succeeded.body.data[0]?.id;
        await Bun.sleep(200);
      }
      expect(ran).toBeDefined();
      expect(ran).not.toBe(sent.at(-1));
      // The stream's last start runs too, once quiet comes; every start ended, each skipped one pointing at a run that ran.
      const last = await runUntil(api, owner, sent.at(-1) as string, ended);
      expect(last.status).toBe("succeeded");
      const runs = await Promise.all(sent.map((id) => runUntil(api, owner, id, ended)));
      const succeeded = new Set(runs.filter((run) => run.status === "succeeded").map((run) => run.id));
      expect(succeeded.size).toBeGreaterThanOrEqual(2);
      for (const run of runs.filter((one) => one.status !== "succeeded")) {
        expect(run).toMatchObject({ status: "skipped", end_reason: REPLACED });
        expect(succeeded.has(run.taken_by)).toBe(true);
      }
      expect(await runsOf(api, owner, flowId)).toEqual(sent);
    }, 90_000);

    test("with a concurrency limit, each key's debounced run waits for its slot", async () => {
      const created = await call(api, owner, "POST", "/flows", {
        name: "debounced and limited",
        debounce: { period_s: 2, key: "{{trigger.customer}}" },
        concurrency: { limit: 1 },
        steps: [
          {
            name: "call",
            subject: "http.request",
            payload: { url: `http://127.0.0.1:${upstream.port}/{{trigger.n}}` },
          },
        ],
      });
      expect(created.status).toBe(200);
      const flowId = created.body.data.id;
      mostInFlight = 0;
      const started: { customer: string; id: string }[] = [];
      for (let n = 0; n < 12; n++) {
        const customer = `c${n % 4}`;
        const answer = await startRun(api, owner, flowId, { customer, n });
        started.push({ customer, id: answer.body.run_id });
      }
      const runs = await Promise.all(started.map(({ id }) => runUntil(api, owner, id, ended)));
      const ran = runs.filter((run) => run.status === "succeeded");
      // One run per key, its last start's; the others skipped in its favour; one at a time.
      expect(ran.map((run) => run.trigger.n).sort((a, b) => a - b)).toEqual([8, 9, 10, 11]);
      expect(runs.filter((run) => run.status === "skipped")).toHaveLength(8);
      expect(mostInFlight).toBe(1);
    }, 60_000);

    test("a debounce is added by an update and shown; a bad one is a 400 naming its field", async () => {
      const definition = { name: "later", steps: echo };
      const created = await call(api, owner, "POST", "/flows", definition);
      expect(created.body.data.debounce).toBeNull();
      const updated = await call(api, owner, "PUT", `/flows/${created.body.data.id}`, {
        ...definition,
        debounce: { period_s: 10, timeout_s: 60, key: "{{trigger.id}}" },
      });
      expect(updated).toMatchObject({
        status: 200,
        body: { data: { debounce: { period_s: 10, timeout_s: 60, key: "{{trigger.id}}" } } },
      });
      const read = await call(api, owner, "GET", `/flows/${created.body.data.id}`);
      expect(read.body.data.debounce).toEqual({ period_s: 10, timeout_s: 60, key: "{{trigger.id}}" });
      const bad = await call(api, owner, "POST", "/flows", { ...definition, debounce: { period_s: 0 } });
      expect(bad).toMatchObject({
        status: 400,
        body: { error: "invalid input: debounce.period_s: must be at least 1" },
      });
      const short = await call(api, owner, "POST", "/flows", {
        ...definition,
        debounce: { period_s: 30, timeout_s: 10 },
      });
      expect(short).toMatchObject({
        status: 400,
        body: { error: "invalid input: debounce.timeout_s: must be at least period_s" },
      });
      const long = await call(api, owner, "POST", "/flows", { ...definition, debounce: { period_s: 86_401 } });
      expect(long).toMatchObject({
        status: 400,
        body: { error: "invalid input: debounce.period_s: must be at most 86400" },
      });
    });
  });
}
