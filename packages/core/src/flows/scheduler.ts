import type { Database } from "@platform/db";
import { type Kysely, type Selectable, sql } from "kysely";
import { PLATFORM_SCOPE } from "../broker/port.ts";
import type { QueuedRun } from "../engine/run-queue.ts";
import type { AccountLimits } from "../limits/account-limits.ts";
import { newRunId } from "../runs/start.ts";
import type { Services } from "../services.ts";
import type { PeriodicJob } from "../worker/periodic.ts";
import { dueTicks } from "./schedules.ts";

/** Flows handled per transaction. */
const PAGE = 200;

type DueFlow = Pick<Selectable<Database["flows"]>, "id" | "account_id" | "revision" | "trigger" | "schedule_next_at">;

/** The ticks a due flow starts now (none for a flow that is no schedule any more), and its next tick. */
function ticksOf(row: DueFlow, now: Date): { ticks: Date[]; next: Date | null } {
  const { trigger } = row;
  if (trigger.type !== "schedule" || row.schedule_next_at === null) return { ticks: [], next: null };
  return dueTicks(trigger, row.schedule_next_at, now);
}

/** The first page of due flows, oldest tick first; `ids` narrows it to those (locked, then, in the transaction). */
function dueFlows(db: Kysely<Database>, now: Date, ids?: string[]) {
  let query = db
    .selectFrom("flows")
    .select(["id", "account_id", "revision", "trigger", "schedule_next_at"])
    .where("schedule_next_at", "<=", now)
    .where("active", "=", true)
    .where("deleted_at", "is", null);
  if (ids) query = query.where("id", "in", ids);
  return query.orderBy("schedule_next_at").limit(PAGE);
}

/**
 * Each account's share of `runs_per_minute` for the ticks of these flows: one Broker call
 * per account, for all its ticks at once; the account's first `granted` ticks (in the order
 * of the flows, each flow's oldest first) start runs, the others none.
 */
async function grantTicks(limits: AccountLimits, rows: DueFlow[], now: Date): Promise<Map<string, number>> {
  const wanted = new Map<string, number>();
  for (const row of rows) {
    const { ticks } = ticksOf(row, now);
    if (ticks.length > 0) wanted.set(row.account_id, (wanted.get(row.account_id) ?? 0) + ticks.length);
  }
  const grants = await Promise.all(
    [...wanted].map(
      async ([account, count]) =>
        [account, (await limits.spendUpTo(account, "runs_per_minute", count)).granted] as const,
    ),
  );
  return new Map(grants);
}

/**
 * Starts the runs of schedule triggers, once a second somewhere in the deployment. Each
 * tick counts against the account's `runs_per_minute` as every other start does: the due
 * flows of a page are read first and each account's ticks taken from the Broker together
 * (`spendUpTo`), then, in one transaction, those flows are locked (skipping those another
 * process holds) and each tick that was granted gets its run, inserted with the tick as its
 * delivery id, so a tick starts at most one run however many processes look (the flow's
 * unique delivery ids); the flow's next tick is written. A tick past the limit starts
 * nothing and is not tried again (as a missed tick with `catch_up: skip`): it is counted in
 * the account's `schedules.refused` metric and logged. The Broker is asked outside the
 * transaction because on PGlite it shares the one connection a transaction holds; a flow
 * changed or locked by another process in between leaves its grant unspent, which can only
 * make the account fall short of its limit, never pass it. After the commit the runs are
 * appended to the run stream; a process that dies in between leaves them to the waker
 * (`wake_at`), so a granted tick also starts at least once. Trigger data:
 * `{scheduled_at, fired_at}`.
 */
export function flowSchedulerJob(
  services: Pick<Services, "db" | "runQueue" | "metrics" | "limits">,
  everyMs = 1000,
  /** The time ticks are due by (tests move it on by hand). */
  clock: () => Date = () => new Date(),
): PeriodicJob {
  return {
    name: "flow-scheduler",
    everyMs,
    async run({ signal, logger }) {
      while (!signal.aborted) {
        const now = clock();
        const seen = await dueFlows(services.db, now).execute();
        if (seen.length === 0) return;
        const granted = await grantTicks(services.limits, seen, now);
        const { started, due, refused } = await services.db.transaction().execute(async (trx) => {
          const rows = await dueFlows(
            trx,
            now,
            seen.map((row) => row.id),
          )
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
          const refused = new Map<string, number>();
          for (const row of rows) {
            const { ticks, next: following } = ticksOf(row, now);
            next.push({ id: row.id, next_at: following?.toISOString() ?? null });
            for (const tick of ticks) {
              const left = granted.get(row.account_id) ?? 0;
              if (left === 0) {
                refused.set(row.account_id, (refused.get(row.account_id) ?? 0) + 1);
                continue;
              }
              granted.set(row.account_id, left - 1);
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
          if (runs.length === 0) return { started: [], due: rows.length, refused };
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
          return { started: inserted, due: rows.length, refused };
        });
        await services.runQueue.requeue(started);
        for (const run of started) {
          services.metrics.count(run.accountId, "runs.started");
          services.metrics.count(PLATFORM_SCOPE, "runs.started");
        }
        for (const [account, ticks] of refused) {
          services.metrics.count(account, "schedules.refused", ticks);
          logger.info({ account, ticks }, "schedule ticks refused: the account is at its runs_per_minute limit");
        }
        // Fewer than a page locked: the rest are another process's (or none are left).
        if (due < PAGE) return;
      }
    },
  };
}
