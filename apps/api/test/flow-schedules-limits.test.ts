import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger, flowSchedulerJob } from "@platform/core";
import { type Caller, call, newCaller, startRun } from "./context.ts";
import { runModes, startTestApi, type TestApi } from "./harness.ts";

const logger = createLogger({ level: "silent", name: "schedule-limits-test" });

/**
 * What a plan allows of schedules (issue 29, finding 4): each tick counts against
 * `runs_per_minute` as every other start does (ticks past it start nothing and are counted
 * in `schedules.refused`), and saving a flow active with a schedule is bounded by how many
 * active schedules the account has (`schedules`) and how close its ticks come
 * (`schedule_interval_seconds`). The scheduler runs under a clock the test moves, a minute a
 * look (see flow-schedules-clock.test.ts); the rate's window is the Broker's real one, which
 * the few seconds of the test stay within.
 */
const FREE = { runs_per_minute: 10, schedules: 2, schedule_interval_seconds: 60 };
const MINUTE_MS = 60_000;
const STEPS = [{ name: "tick", subject: "transform", payload: {} }];

function planLimitsFile(): string {
  const file = join(mkdtempSync(join(tmpdir(), "plan-limits-")), "limits.json");
  writeFileSync(file, JSON.stringify({ free: FREE }));
  return file;
}

const schedule = (cron: string, active = true) => ({
  name: `every ${cron}`,
  active,
  trigger: { type: "schedule", cron },
  steps: STEPS,
});

for (const { label, backend, redis, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(`schedule limits on ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;

    beforeAll(async () => {
      api = await startTestApi({ backend, redis, env: { PLAN_LIMITS_FILE: planLimitsFile() } });
    }, 60_000);
    afterAll(() => api.stop());

    async function minutely(caller: Caller): Promise<{ id: string; first: number }> {
      const created = await call(api, caller, "POST", "/flows", schedule("* * * * *"));
      expect(created.status).toBe(200);
      return { id: created.body.data.id, first: Date.parse(created.body.data.trigger.next_fire_times[0]) };
    }

    const runsOf = async (caller: Caller, flowId: string): Promise<number> =>
      (await call(api, caller, "GET", `/flows/${flowId}/runs?limit=100`)).body.data.length;

    // biome-ignore lint/suspicious/noExplicitAny: the assertions that read a body are its type check
    const usageOf = async (caller: Caller): Promise<Record<string, any>> =>
      Object.fromEntries(
        ((await call(api, caller, "GET", "/accounts/usage")).body.data.limits as { name: string }[]).map((limit) => [
          limit.name,
          limit,
        ]),
      );

    test("schedule ticks count against runs_per_minute: past it they start nothing, and are counted as refused", async () => {
      const busy = await newCaller(api, "ticks-busy");
      const quiet = await newCaller(api, "ticks-quiet");
      const spent = await newCaller(api, "ticks-spent");
      const busyFlows = [await minutely(busy), await minutely(busy)];
      const quietFlow = await minutely(quiet);
      const spentFlow = await minutely(spent);
      for (let n = 0; n < FREE.runs_per_minute; n++) {
        expect((await startRun(api, spent, spentFlow.id)).status).toBe(200);
      }

      // Eight looks, a minute apart: each has one tick of every flow due.
      const first = Math.max(...[...busyFlows, quietFlow, spentFlow].map((flow) => flow.first));
      let now = first;
      const scheduler = flowSchedulerJob(api.services, 1000, () => new Date(now));
      const signal = new AbortController().signal;
      for (let look = 0; look < 8; look++) {
        now = first + look * MINUTE_MS + 5;
        await scheduler.run({ signal, logger });
      }

      // The busy account's 16 ticks: its plan's 10 start runs, 6 are refused.
      const started =
        (await runsOf(busy, busyFlows[0]?.id as string)) + (await runsOf(busy, busyFlows[1]?.id as string));
      expect(started).toBe(FREE.runs_per_minute);
      const byHand = await startRun(api, busy, busyFlows[0]?.id as string);
      expect(byHand.status).toBe(429);
      expect(byHand.body).toEqual({
        error: "runs_per_minute is 10 on the free plan",
        limit: { name: "runs_per_minute", limit: 10, plan: "free" },
      });
      expect((await usageOf(busy)).runs_per_minute.used).toBe(FREE.runs_per_minute);
      const metrics = await call(api, busy, "POST", "/monitoring/metrics/current", {
        metrics: ["schedules.refused", "runs.started"],
      });
      expect(metrics.body.data.map((metric: { value: number }) => metric.value)).toEqual([6, FREE.runs_per_minute]);

      // Another account's ticks are its own: all 8 start.
      expect(await runsOf(quiet, quietFlow.id)).toBe(8);
      // An account that spent its minute by hand starts none.
      expect(await runsOf(spent, spentFlow.id)).toBe(FREE.runs_per_minute);
    });

    test("the plan bounds active schedules (409) and how close their ticks come (400), at create, update and activation", async () => {
      const owner = await newCaller(api, "schedules-bounded");
      const tooClose =
        "ticks as close as 30 s apart, closer than the 60 s the free plan allows (schedule_interval_seconds)";
      const intervalRefusal = {
        error: `invalid input: trigger.cron: ${tooClose}`,
        limit: { name: "schedule_interval_seconds", limit: 60, used: 30, plan: "free" },
        problems: [{ path: "trigger.cron", message: tooClose }],
      };
      const tooOften = await call(api, owner, "POST", "/flows", schedule("*/30 * * * * *"));
      expect(tooOften.status).toBe(400);
      expect(tooOften.body).toEqual(intervalRefusal);
      // Two ticks a second apart once an hour count as much as every second.
      const burst = await call(api, owner, "POST", "/flows", schedule("0,1 0 * * * *"));
      expect(burst.status).toBe(400);
      expect(burst.body.limit).toEqual({ name: "schedule_interval_seconds", limit: 60, used: 1, plan: "free" });
      const draft = await call(api, owner, "POST", "/flows/validate", schedule("*/30 * * * * *"));
      expect(draft.body.data).toEqual({
        valid: false,
        problems: [{ path: "trigger.cron", message: tooClose }],
      });
      // Saved inactive it is kept (it ticks nowhere); activating it is refused.
      const parked = await call(api, owner, "POST", "/flows", schedule("*/30 * * * * *", false));
      expect(parked.status).toBe(200);
      const parkedId = parked.body.data.id;
      const activated = await call(api, owner, "PUT", `/flows/${parkedId}`, schedule("*/30 * * * * *"));
      expect(activated).toMatchObject({ status: 400, body: intervalRefusal });

      const minutelyId = (await call(api, owner, "POST", "/flows", schedule("* * * * *"))).body.data.id;
      const everyFive = await call(api, owner, "POST", "/flows", schedule("0 */5 * * * *"));
      expect(everyFive.status).toBe(200);
      const countRefusal = {
        error:
          "the account has 2 active schedules, the most the free plan allows (schedules); switch one off (active: false) or give it another trigger first",
        limit: { name: "schedules", limit: 2, used: 2, plan: "free" },
      };
      const third = await call(api, owner, "POST", "/flows", schedule("0 0 * * * *"));
      expect(third).toMatchObject({ status: 409, body: countRefusal });
      expect((await call(api, owner, "POST", "/flows/validate", schedule("0 0 * * * *"))).body.data.problems).toEqual([
        { path: "", message: countRefusal.error },
      ]);
      // Activating a third is refused too; a webhook flow is no schedule, and an active schedule saved again is not counted twice.
      expect(await call(api, owner, "PUT", `/flows/${parkedId}`, schedule("0 0 * * * *"))).toMatchObject({
        status: 409,
        body: countRefusal,
      });
      expect((await call(api, owner, "POST", "/flows", { name: "hook", steps: STEPS })).status).toBe(200);
      expect((await call(api, owner, "PUT", `/flows/${minutelyId}`, schedule("*/2 * * * *"))).status).toBe(200);

      const usage = await usageOf(owner);
      expect(usage.schedules).toEqual({ name: "schedules", limit: 2, used: 2, unit: "schedules", per: "account" });
      expect(usage.schedule_interval_seconds).toEqual({
        name: "schedule_interval_seconds",
        limit: 60,
        used: 120,
        unit: "seconds",
        per: "flow",
        of: minutelyId,
      });

      // Switching one off frees its place: it is never refused, whatever its trigger.
      expect((await call(api, owner, "PUT", `/flows/${minutelyId}`, schedule("*/2 * * * *", false))).status).toBe(200);
      expect((await call(api, owner, "PUT", `/flows/${parkedId}`, schedule("0 0 * * * *"))).status).toBe(200);
      expect((await usageOf(owner)).schedule_interval_seconds).toMatchObject({ used: 300, of: everyFive.body.data.id });
    });
  });
}
