import { sql } from "kysely";
import { PLATFORM_SCOPE } from "../broker/port.ts";
import type { QueuedRun } from "../engine/run-queue.ts";
import { newRunId } from "../runs/start.ts";
import type { Services } from "../services.ts";
import type { PeriodicJob } from "../worker/periodic.ts";
import { dueTicks, type ScheduleSettings } from "./schedules.ts";

/** Flows handled per transaction. */
const PAGE = 200;

/**
 * Starts the runs of schedule triggers, once a second somewhere in the deployment. In one
 * transaction per page of due flows (`schedule_next_at` passed; locked, skipping those
 * another process holds): each tick's run is inserted with the tick as its delivery id, so
 * a tick starts at most one run however many processes look (the flow's unique delivery
 * ids), and the flow's next tick is written. After the commit the runs are appended to the
 * run stream; a process that dies in between leaves them to the waker (`wake_at`), so a tick
 * also starts at least once. Trigger data: `{scheduled_at, fired_at}`.
 */
export function flowSchedulerJob(
  services: Pick<Services, "db" | "runQueue" | "metrics">,
  everyMs = 1000,
  /** The time ticks are due by (tests move it on by hand). */
  clock: () => Date = () => new Date(),
): PeriodicJob {
  return {
    name: "flow-scheduler",
    everyMs,
    async run({ signal }) {
      while (!signal.aborted) {
        const now = clock();
        const { started, due } = await services.db.transaction().execute(async (trx) => {
          const rows = await trx
            .selectFrom("flows")
            .select(["id", "account_id", "revision", "trigger", "schedule_next_at"])
            .where("schedule_next_at", "<=", now)
            .where("active", "=", true)
            .where("deleted_at", "is", null)
            .orderBy("schedule_next_at")
            .limit(PAGE)
            .forUpdate()
            .skipLocked()
            .execute();
          const runs: {
            id: string;
            account_id: string;
            flow_id: string;
            revision: number;
            trigger: unknown;
            delivery_id: string;
          }[] = [];
          const next: { id: string; next_at: string | null }[] = [];
          for (const row of rows) {
            const trigger = row.trigger as unknown as ScheduleSettings;
            if (trigger.type !== "schedule" || row.schedule_next_at === null) {
              next.push({ id: row.id, next_at: null });
              continue;
            }
            const { ticks, next: following } = dueTicks(trigger, row.schedule_next_at, now);
            next.push({ id: row.id, next_at: following?.toISOString() ?? null });
            for (const tick of ticks) {
              runs.push({
                id: newRunId(),
                account_id: row.account_id,
                flow_id: row.id,
                revision: row.revision,
                trigger: { scheduled_at: tick.toISOString(), fired_at: now.toISOString() },
                delivery_id: `schedule:${tick.toISOString()}`,
              });
            }
          }
          if (next.length > 0) {
            await sql`
              update flows as f set schedule_next_at = v.next_at
              from jsonb_to_recordset(${JSON.stringify(next)}::jsonb) as v(id uuid, next_at timestamptz)
              where f.id = v.id`.execute(trx);
          }
          if (runs.length === 0) return { started: [], due: rows.length };
          // A tick's run is inserted only if it claimed the tick (see run_deliveries): never twice.
          const { rows: inserted } = await sql<QueuedRun>`
            with v as (
              select * from jsonb_to_recordset(${JSON.stringify(runs)}::jsonb) as v(
                id uuid, account_id text, flow_id uuid, revision integer, trigger jsonb, delivery_id text)),
            claimed as (
              insert into run_deliveries (flow_id, delivery_id, run_id)
              select flow_id, delivery_id, id from v
              on conflict do nothing
              returning run_id)
            insert into runs (id, account_id, flow_id, revision, status, trigger, delivery_id, wake_at)
            select v.id, v.account_id, v.flow_id, v.revision, 'queued', v.trigger, v.delivery_id,
              now() + interval '2 minutes'
            from v where v.id in (select run_id from claimed)
            returning id, account_id as "accountId", flow_id as "flowId"`.execute(trx);
          return { started: inserted, due: rows.length };
        });
        await services.runQueue.requeue(started);
        for (const run of started) {
          services.metrics.count(run.accountId, "runs.started");
          services.metrics.count(PLATFORM_SCOPE, "runs.started");
        }
        if (due < PAGE) return;
      }
    },
  };
}
