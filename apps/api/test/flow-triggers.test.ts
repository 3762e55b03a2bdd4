import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "kysely";
import { type Caller, call, newCaller, runUntil, startRun } from "./context.ts";
import { runModes, startTestApi, type TestApi } from "./harness.ts";
import { invalidInput } from "./invalid-input.ts";

/**
 * Schedule and manual triggers (issue 19): a schedule's ticks each start one run with
 * `{scheduled_at, fired_at}`, none while the flow is inactive; missed ticks follow
 * `catch_up`; a manual flow's webhook answers nothing.
 */

// biome-ignore lint/suspicious/noExplicitAny: the assertions that read a body are its type check
type Body = any;

const step = { name: "tick", subject: "transform", payload: { at: "{{trigger.scheduled_at}}" } };

for (const { label, backend, redis, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(`schedule and manual triggers on ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;
    let owner: Caller;
    beforeAll(async () => {
      api = await startTestApi({ backend, redis, worker: true });
      owner = await newCaller(api, "triggers");
    }, 60_000);
    afterAll(() => api.stop());

    async function runsOf(flowId: string): Promise<Body[]> {
      return (await call(api, owner, "GET", `/flows/${flowId}/runs?limit=100`)).body.data;
    }

    test("a schedule starts one run per tick, with the scheduled and actual times; none once inactive", async () => {
      const body = { name: "every second", trigger: { type: "schedule", cron: "* * * * * *" }, steps: [step] };
      const created = await call(api, owner, "POST", "/flows", body);
      expect(created.status).toBe(200);
      const flowId = created.body.data.id;
      expect(created.body.data.trigger).toMatchObject({ type: "schedule", cron: "* * * * * *", timezone: "UTC" });
      const next: string[] = created.body.data.trigger.next_fire_times;
      expect(next).toHaveLength(5);
      expect(Date.parse(next[1] as string) - Date.parse(next[0] as string)).toBe(1000);

      for (;;) {
        const runs = await runsOf(flowId);
        if (runs.filter((run) => run.status === "succeeded").length >= 3) break;
        await Bun.sleep(100);
      }
      const paused = await call(api, owner, "PUT", `/flows/${flowId}`, { ...body, active: false });
      expect(paused.body.data.trigger.next_fire_times).toEqual([]);
      await Bun.sleep(300);
      const ran = await runsOf(flowId);
      for (const run of ran) await runUntil(api, owner, run.id);
      const details = await Promise.all(
        ran.map(async (run) => (await call(api, owner, "GET", `/runs/${run.id}`)).body),
      );
      const ticks = details.map((run) => run.trigger.scheduled_at as string).sort();
      // One run per tick, and no tick between the first and the last left out.
      expect(new Set(ticks).size).toBe(ticks.length);
      for (let i = 1; i < ticks.length; i++) {
        expect(Date.parse(ticks[i] as string) - Date.parse(ticks[i - 1] as string)).toBe(1000);
      }
      for (const run of details) {
        expect(Date.parse(run.trigger.fired_at)).toBeGreaterThanOrEqual(Date.parse(run.trigger.scheduled_at));
        expect(run.output).toEqual({ at: run.trigger.scheduled_at });
      }
      await Bun.sleep(2500);
      expect((await runsOf(flowId)).length).toBe(ran.length);
    });

    test("missed ticks start nothing (catch_up: skip) or one run for the latest (catch_up: latest)", async () => {
      // A daily tick two hours ago, in Berlin's time: missed, and far from any tick still on time.
      const tick = new Date(Date.now() - 2 * 3_600_000);
      tick.setUTCSeconds(0, 0);
      const berlin = (part: "hour" | "minute") =>
        Number(
          new Intl.DateTimeFormat("en-GB", { timeZone: "Europe/Berlin", [part]: "numeric", hourCycle: "h23" })
            .formatToParts(tick)
            .find((p) => p.type === part)?.value,
        );
      const flows: Record<string, string> = {};
      for (const catchUp of ["skip", "latest"]) {
        const created = await call(api, owner, "POST", "/flows", {
          name: `daily ${catchUp}`,
          trigger: {
            type: "schedule",
            cron: `${berlin("minute")} ${berlin("hour")} * * *`,
            timezone: "Europe/Berlin",
            catch_up: catchUp,
          },
          steps: [step],
        });
        expect(created.status).toBe(200);
        flows[catchUp] = created.body.data.id;
      }
      // As if no worker had been up for the last three days' ticks.
      const threeDaysAgo = new Date(tick.getTime() - 3 * 86_400_000);
      await sql`update flows set schedule_next_at = ${threeDaysAgo} where id in (${sql.join(Object.values(flows))})`.execute(
        api.services.db,
      );
      let latest: Body[] = [];
      for (let waited = 0; latest.length === 0 && waited < 200; waited++) {
        latest = await runsOf(flows.latest as string);
        await Bun.sleep(50);
      }
      const run = await runUntil(api, owner, latest[0].id);
      expect(run.trigger.scheduled_at).toBe(tick.toISOString());
      expect(latest).toHaveLength(1);
      expect(await runsOf(flows.skip as string)).toEqual([]);
      const skip = await call(api, owner, "GET", `/flows/${flows.skip}`);
      expect(Date.parse(skip.body.data.trigger.next_fire_times[0])).toBeGreaterThan(Date.now());
    });

    test("a bad expression or zone, or a webhook field on a schedule, is a 400 naming it", async () => {
      const cases: [unknown, [path: string, message: string]][] = [
        [
          { type: "schedule", cron: "61 * * * *" },
          ["trigger.cron", "is not a cron expression: Invalid value for minute: 61"],
        ],
        [{ type: "schedule" }, ["trigger.cron", "is required with a schedule trigger"]],
        [
          { type: "schedule", cron: "* * * * *", timezone: "Mars/Base" },
          ["trigger.timezone", 'must be an IANA time zone such as Europe/Berlin or UTC (not "Mars/Base")'],
        ],
        [
          { type: "schedule", cron: "* * * * *", access: "api_key" },
          ["trigger.access", "is not used with a schedule trigger"],
        ],
        [{ type: "manual", cron: "* * * * *" }, ["trigger.cron", "is not used with a manual trigger"]],
        [{ cron: "* * * * *" }, ["trigger.cron", "is not used with a webhook trigger"]],
        [{ type: "cron" }, ["trigger.type", 'must be "webhook", "schedule" or "manual"']],
      ];
      for (const [trigger, problem] of cases) {
        const answer = await call(api, owner, "POST", "/flows", { name: "bad", trigger, steps: [step] });
        expect({ trigger, status: answer.status, body: answer.body }).toEqual({
          trigger,
          status: 400,
          body: invalidInput(problem),
        });
      }
    });

    test("a manual flow runs by hand only: its webhook answers 404 until its trigger is a webhook again", async () => {
      const body = { name: "by hand", trigger: { type: "manual" }, steps: [step] };
      const created = await call(api, owner, "POST", "/flows", body);
      expect(created.body.data.trigger).toEqual({ type: "manual" });
      const { id, webhook } = created.body.data;
      const path = new URL(webhook.url).pathname;
      expect((await api.request(path, { method: "POST", json: {} })).status).toBe(404);
      const run = await runUntil(api, owner, (await startRun(api, owner, id, { scheduled_at: "by hand" })).body.run_id);
      expect(run).toMatchObject({ status: "succeeded", output: { at: "by hand" } });

      await call(api, owner, "PUT", `/flows/${id}`, { ...body, trigger: { type: "webhook" } });
      expect((await api.request(path, { method: "POST", json: {} })).status).toBe(200);
      await call(api, owner, "PUT", `/flows/${id}`, body);
      expect((await api.request(path, { method: "POST", json: {} })).status).toBe(404);
    });
  });
}
