import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type Caller, call, newCaller, runUntil, startRun } from "./context.ts";
import { runModes, startTestApi, type TestApi } from "./harness.ts";

/**
 * Batches (issue 31): starts of a key gather into one run, whose trigger is the list of their
 * data in the order they were accepted, once `max_items` arrived or `timeout_s` passed since
 * the first; each start is answered its own run id at once, and the ones the batch run took
 * end `batched`, pointing at it. A batch whose list would pass TRIGGER_MAX_BYTES runs without
 * the start that would have passed it.
 */
const ENDED = new Set(["succeeded", "failed", "batched", "skipped", "cancelled"]);
const ended = (run: { status: string }) => ENDED.has(run.status);
/** Small for this suite: two of the large starts below fill a batch's list. */
const TRIGGER_MAX_BYTES = 4000;

for (const { label, backend, redis, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(`batches on ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;
    let owner: Caller;

    beforeAll(async () => {
      api = await startTestApi({ backend, redis, worker: true, env: { TRIGGER_MAX_BYTES: String(TRIGGER_MAX_BYTES) } });
      owner = await newCaller(api, "batch");
    }, 60_000);
    afterAll(async () => {
      await api.stop();
    });

    /** A flow whose one step answers its trigger, batched as `batch` says. */
    async function batchedFlow(batch: unknown): Promise<string> {
      const created = await call(api, owner, "POST", "/flows", {
        name: "batched",
        batch,
        steps: [{ name: "echo", subject: "transform", payload: { items: "{{trigger}}" } }],
      });
      expect(created.status).toBe(200);
      expect(created.body.data.batch).toEqual(batch);
      return created.body.data.id;
    }

    /** Every start's run once ended: the batch runs that ran, and the others. */
    async function outcome(ids: string[]) {
      // The batch runs first: a start that joined one ended when it joined.
      const runs = await Promise.all(ids.map((id) => runUntil(api, owner, id, ended)));
      const ran = runs.filter((run) => run.status !== "batched");
      return { runs, ran: await Promise.all(ran.map((run) => runUntil(api, owner, run.id, ended))) };
    }

    test("max_items starts run once, their data listed in arrival order; each answered its own id, the others batched", async () => {
      const flowId = await batchedFlow({ max_items: 4, timeout_s: 600, key: "{{trigger.customer}}" });
      const ids: string[] = [];
      for (let n = 0; n < 8; n++) {
        const started = await startRun(api, owner, flowId, { customer: "a", n });
        expect(started.status).toBe(200);
        ids.push(started.body.run_id);
      }
      expect(new Set(ids).size).toBe(8);
      const { runs, ran } = await outcome(ids);
      expect(ran.map((run) => ({ status: run.status, output: run.output }))).toEqual([
        { status: "succeeded", output: { items: [0, 1, 2, 3].map((n) => ({ customer: "a", n })) } },
        { status: "succeeded", output: { items: [4, 5, 6, 7].map((n) => ({ customer: "a", n })) } },
      ]);
      // The batch run's trigger is the list; each start it took says so.
      expect(ran[0].trigger).toEqual(ran[0].output.items);
      for (const run of runs.filter((one) => one.status === "batched")) {
        const batch = ran.find((one) => one.output.items.some((item: { n: number }) => item.n === run.trigger.n));
        expect(run).toMatchObject({ taken_by: batch.id, end_reason: `joined batch run ${batch.id}` });
        expect(run.finished_at).not.toBeNull();
      }
      expect(runs.filter((run) => run.status === "batched")).toHaveLength(6);
    }, 60_000);

    test("timeout_s closes a batch that did not fill; each key has batches of its own", async () => {
      const flowId = await batchedFlow({ max_items: 100, timeout_s: 2, key: "{{trigger.customer}}" });
      const ids: string[] = [];
      for (let n = 0; n < 6; n++) {
        const started = await startRun(api, owner, flowId, { customer: n % 2 === 0 ? "a" : "b", n });
        ids.push(started.body.run_id);
      }
      const { ran } = await outcome(ids);
      const lists = ran.map((run) => run.output.items.map((item: { n: number }) => item.n));
      expect(lists.sort()).toEqual([
        [0, 2, 4],
        [1, 3, 5],
      ]);
    }, 60_000);

    test("a batch holding a start says why it waits", async () => {
      const flowId = await batchedFlow({ max_items: 10, timeout_s: 600 });
      const started = await startRun(api, owner, flowId, { n: 1 });
      const waiting = await runUntil(api, owner, started.body.run_id, (run) => run.queue_reason !== null);
      expect(waiting).toMatchObject({ status: "queued", queue_reason: "collecting a batch" });
    });

    test("a start whose data would take the list past TRIGGER_MAX_BYTES runs in the next batch", async () => {
      const flowId = await batchedFlow({ max_items: 10, timeout_s: 2 });
      const large = "x".repeat(Math.floor(TRIGGER_MAX_BYTES / 2.5));
      const ids: string[] = [];
      for (let n = 0; n < 3; n++) {
        const started = await startRun(api, owner, flowId, { n, large });
        expect(started.status).toBe(200);
        ids.push(started.body.run_id);
      }
      const { ran } = await outcome(ids);
      expect(ran.map((run) => run.output.items.map((item: { n: number }) => item.n)).sort()).toEqual([[0, 1], [2]]);
      for (const run of ran) expect(JSON.stringify(run.trigger).length).toBeLessThanOrEqual(TRIGGER_MAX_BYTES);
    }, 60_000);

    test("with a rate limit, the starts past it are skipped before they join a batch", async () => {
      const created = await call(api, owner, "POST", "/flows", {
        name: "limited batches",
        rate_limit: { limit: 3, period_s: 600 },
        batch: { max_items: 3, timeout_s: 600 },
        steps: [{ name: "echo", subject: "transform", payload: { items: "{{trigger}}" } }],
      });
      expect(created.status).toBe(200);
      const ids: string[] = [];
      for (let n = 0; n < 5; n++) ids.push((await startRun(api, owner, created.body.data.id, { n })).body.run_id);
      const { runs, ran } = await outcome(ids);
      // The three the rate limit lets through (the first three a worker judges: workers may take
      // them out of order) fill one batch, in arrival order; the two past it never join one.
      const batches = ran.filter((run) => run.status === "succeeded").map((run) => run.output.items);
      expect(batches).toHaveLength(1);
      const batched = (batches[0] as { n: number }[]).map((item) => item.n);
      expect(batched).toHaveLength(3);
      expect(batched).toEqual([...batched].sort((a, b) => a - b));
      expect(runs.map((run) => run.status).sort()).toEqual(["batched", "batched", "skipped", "skipped", "succeeded"]);
      const skipped = runs.filter((run) => run.status === "skipped").map((run) => run.trigger.n);
      expect([...batched, ...skipped].sort()).toEqual([0, 1, 2, 3, 4]);
    }, 60_000);

    test("a batch is added by an update and shown; a bad one is a 400 naming its field", async () => {
      const definition = { name: "later", steps: [{ name: "s", subject: "transform", payload: {} }] };
      const created = await call(api, owner, "POST", "/flows", definition);
      expect(created.body.data.batch).toBeNull();
      const updated = await call(api, owner, "PUT", `/flows/${created.body.data.id}`, {
        ...definition,
        batch: { max_items: 50, timeout_s: 30 },
      });
      expect(updated).toMatchObject({ status: 200, body: { data: { batch: { max_items: 50, timeout_s: 30 } } } });
      const read = await call(api, owner, "GET", `/flows/${created.body.data.id}`);
      expect(read.body.data.batch).toEqual({ max_items: 50, timeout_s: 30 });
      const bad = await call(api, owner, "POST", "/flows", {
        ...definition,
        batch: { max_items: 1, timeout_s: 86_401 },
      });
      expect(bad).toMatchObject({
        status: 400,
        body: { error: "invalid input: batch.max_items: must be at least 2; batch.timeout_s: must be at most 86400" },
      });
      const missing = await call(api, owner, "POST", "/flows", { ...definition, batch: { max_items: 1001 } });
      expect(missing.status).toBe(400);
      expect(missing.body.error).toContain("batch.max_items: must be at most 1000");
      expect(missing.body.error).toContain("batch.timeout_s");
    });
  });
}
