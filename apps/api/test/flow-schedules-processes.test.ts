import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { testEnv } from "@platform/db/testing";
import { sql } from "kysely";
import { PlatformProcesses } from "./process-helpers.ts";

/**
 * A schedule's ticks start exactly one run each however many workers look, and a worker
 * killed meanwhile loses none (scale-out: an API and three workers on PostgreSQL and Redis).
 * A second-by-second schedule runs for TICKS ticks; the second worker is SIGKILLed half-way.
 * The runs' ticks are all different and follow each other a second apart, from the first
 * to the last: none doubled, none lost.
 */
const TICKS = 30;
const skip = !testEnv.DATABASE_URL || !testEnv.REDIS_URL;

describe.skipIf(skip)(
  `a schedule with three workers${skip ? " (skipped: DATABASE_URL and REDIS_URL are both needed)" : ""}`,
  () => {
    let platform: PlatformProcesses;

    beforeAll(async () => {
      platform = await PlatformProcesses.start({ redisUrl: testEnv.REDIS_URL as string });
    }, 120_000);

    afterAll(async () => {
      await platform?.stop();
    });

    test("every tick starts one run, a worker killed half-way included", async () => {
      const token = await platform.signUp("schedule");
      platform.worker("worker A");
      const workerB = platform.worker("worker B");
      platform.worker("worker C");
      const definition = {
        name: "every second",
        trigger: { type: "schedule", cron: "* * * * * *" },
        steps: [{ name: "tick", subject: "transform", payload: { at: "{{trigger.scheduled_at}}" } }],
      };
      const flow = await platform.request("POST", "/flows", definition, token);
      expect(flow.status).toBe(200);
      const flowId = (flow.body.data as { id: string }).id;

      const count = async () =>
        Number(
          (
            await sql<{ n: string }>`select count(*) as n from runs where flow_id = ${flowId}`.execute(
              platform.database.db,
            )
          ).rows[0]?.n,
        );
      await platform.until("half the ticks", async () => ((await count()) >= TICKS / 2 ? true : undefined));
      await platform.kill(workerB);
      await platform.until("every tick", async () => ((await count()) >= TICKS ? true : undefined));
      await platform.request("PUT", `/flows/${flowId}`, { ...definition, active: false }, token);

      const runs = await platform.until("every run to end", async () => {
        const { rows } = await sql<{ status: string; scheduled_at: string }>`
          select status, trigger ->> 'scheduled_at' as scheduled_at from runs where flow_id = ${flowId}`.execute(
          platform.database.db,
        );
        return rows.every((row) => row.status === "succeeded") ? rows : undefined;
      });
      const ticks = runs.map((run) => Date.parse(run.scheduled_at)).sort((a, b) => a - b);
      expect(ticks.length).toBeGreaterThanOrEqual(TICKS);
      expect(new Set(ticks).size).toBe(ticks.length);
      for (let i = 1; i < ticks.length; i++) expect((ticks[i] as number) - (ticks[i - 1] as number)).toBe(1000);
    }, 180_000);
  },
);
