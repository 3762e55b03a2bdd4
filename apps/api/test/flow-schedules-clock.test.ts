import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createLogger, flowSchedulerJob } from "@platform/core";
import { type KyselyPlugin, sql } from "kysely";
import { type Caller, call, newCaller } from "./context.ts";
import { runModes, startTestApi, type TestApi } from "./harness.ts";

const logger = createLogger({ level: "silent", name: "schedule-clock-test" });

/**
 * A schedule's ticks under a clock the test moves (issue 19): three schedulers (as three
 * workers run them) look at every tick together, 100 ticks of a minutely schedule; each
 * tick starts exactly one run. At one tick a scheduler dies inside its transaction, after
 * it locked the flow and before it committed (its statements fail, as a killed process's
 * would); that tick's run still starts, once. (flow-schedules-processes.test.ts kills a
 * real worker process under the real clock.)
 */
const TICKS = 100;
const MINUTE_MS = 60_000;

/** A database that fails every raw statement: a scheduler that dies after its SELECT ... FOR UPDATE. */
const diesMidTransaction: KyselyPlugin = {
  transformQuery(args) {
    if (args.node.kind === "RawNode") throw new Error("the worker was killed");
    return args.node;
  },
  transformResult: async (args) => args.result,
};

for (const { label, backend, redis, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(
    `schedule ticks under a test clock on ${label}${skip ? ` (skipped: ${skip})` : ""}`,
    () => {
      let api: TestApi;
      let owner: Caller;

      beforeAll(async () => {
        api = await startTestApi({ backend, redis });
        owner = await newCaller(api, "schedule-clock");
      }, 60_000);
      afterAll(() => api.stop());

      test("100 ticks start 100 runs with three schedulers, a scheduler dying at a tick included", async () => {
        const created = await call(api, owner, "POST", "/flows", {
          name: "minutely",
          trigger: { type: "schedule", cron: "* * * * *" },
          steps: [{ name: "tick", subject: "transform", payload: {} }],
        });
        expect(created.status).toBe(200);
        const flowId = created.body.data.id;
        const first = new Date(created.body.data.trigger.next_fire_times[0]).getTime();
        let now = first - MINUTE_MS;
        const clock = () => new Date(now);
        const schedulers = [1, 2, 3].map(() => flowSchedulerJob(api.services, 1000, clock));
        const dying = flowSchedulerJob(
          { ...api.services, db: api.services.db.withPlugin(diesMidTransaction) },
          1000,
          clock,
        );
        const signal = new AbortController().signal;

        for (let tick = 0; tick < TICKS; tick++) {
          now = first + tick * MINUTE_MS + 5;
          if (tick === TICKS / 2) await expect(dying.run({ signal, logger })).rejects.toThrow("the worker was killed");
          await Promise.all(schedulers.map((scheduler) => scheduler.run({ signal, logger })));
        }

        const { rows } = await sql<{ scheduled_at: string; delivery_id: string }>`
        select trigger ->> 'scheduled_at' as scheduled_at, delivery_id from runs where flow_id = ${flowId}
        order by trigger ->> 'scheduled_at'`.execute(api.services.db);
        expect(rows).toHaveLength(TICKS);
        expect(rows.map((row) => Date.parse(row.scheduled_at))).toEqual(
          Array.from({ length: TICKS }, (_, tick) => first + tick * MINUTE_MS),
        );
        expect(new Set(rows.map((row) => row.delivery_id)).size).toBe(TICKS);
      }, 120_000);
    },
  );
}
