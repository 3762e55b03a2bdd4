import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type Caller, call, createFlow, newCaller, runUntil, startRun } from "./context.ts";
import { runModes, startTestApi, type TestApi } from "./harness.ts";

/**
 * Tenants isolated in the run queue: one account's backlog, however long, does not push another
 * account's runs behind it. Each account has a lane in the queue and the workers take the lanes
 * in turns (`RunQueue`), so a run of a quiet account waits for at most one turn of each busy one.
 */

/** Runs the busy account queues at once: more than twice what the workers take in at a time (64 per member). */
const BACKLOG = 400;

for (const { label, backend, redis, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(`the run queue shared fairly on ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;
    let busy: Caller;
    let quiet: Caller;

    beforeAll(async () => {
      api = await startTestApi({ backend, redis, worker: true });
      busy = await newCaller(api, "busy");
      quiet = await newCaller(api, "quiet");
    }, 60_000);
    afterAll(() => api.stop());

    /** Every run of a flow, page by page. */
    async function runsOf(caller: Caller, flowId: string): Promise<{ status: string; finished_at: string | null }[]> {
      const runs = [];
      let cursor = "";
      for (;;) {
        const page = await call(api, caller, "GET", `/flows/${flowId}/runs?limit=100${cursor}`);
        expect(page.status).toBe(200);
        runs.push(...page.body.data);
        if (!page.body.next_cursor) return runs;
        cursor = `&cursor=${page.body.next_cursor}`;
      }
    }

    test("another account's run overtakes one account's backlog", async () => {
      // About 10 ms of CPU a run, as in the report that found the queue unfair: the backlog grows faster than it drains.
      const burning = await createFlow(api, busy, [
        {
          name: "burn",
          subject: "js",
          payload: {
            code: "export default () => { const end = Date.now() + 10; while (Date.now() < end) {} return 1 }",
          },
        },
      ]);
      const echo = await createFlow(api, quiet, [
        { name: "echo", subject: "transform", payload: { n: "{{trigger.n}}" } },
      ]);

      const accepted = await Promise.all(Array.from({ length: BACKLOG }, () => startRun(api, busy, burning, {})));
      for (const answer of accepted) expect(answer.status).toBe(200);
      const started = await startRun(api, quiet, echo, { n: 1 });
      const overtaking = await runUntil(api, quiet, started.body.run_id);
      expect(overtaking).toMatchObject({ status: "succeeded", output: { n: 1 } });

      // Once the backlog is done: how much of it had ended before the quiet account's run did.
      await runUntil(api, busy, accepted.at(-1)?.body.run_id);
      let backlog = await runsOf(busy, burning);
      while (backlog.some((run) => run.finished_at === null)) {
        await Bun.sleep(100);
        backlog = await runsOf(busy, burning);
      }
      expect(backlog).toHaveLength(BACKLOG);
      const endedBefore = backlog.filter((run) => (run.finished_at as string) < overtaking.finished_at).length;
      // In one queue it would have waited for all of the backlog to be taken in, at least BACKLOG - 128 ended.
      expect(endedBefore).toBeLessThan(BACKLOG / 2);
    }, 120_000);
  });
}
