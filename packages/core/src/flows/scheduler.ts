import type { Database } from "@platform/db";
import { type Kysely, type Selectable, sql } from "kysely";
import type { AccountLimits } from "../limits/account-limits.ts";
import { type NewRun, newRunId, startRunsInTransaction } from "../runs/insert.ts";
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
 * make the account fall short of its limit, never pass it. The runs are created as every
 * run is (runs/insert.ts, `startRunsInTransaction`): queued after the commit, or by the waker
 * should this process die first, so a granted tick also starts at least once. Trigger data:
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
        const { due, refused } = await startRunsInTransaction(services, "schedule", async (trx, insertRuns) => {
          const rows = await dueFlows(
            trx,
            now,
            seen.map((row) => row.id),
          )
            .forUpdate()
            .skipLocked()
            .execute();
          const runs: NewRun[] = [];
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
                accountId: row.account_id,
                flowId: row.id,
                revision: row.revision,
                trigger: JSON.stringify({ scheduled_at: tick.toISOString(), fired_at: now.toISOString() }),
                // A tick's run is inserted only if it claimed the tick: never twice.
                deliveryId: `schedule:${tick.toISOString()}`,
              });
            }
          }
          if (next.length > 0) {
            await sql`
              update flows as f set schedule_next_at = v.next_at
              from jsonb_to_recordset(${JSON.stringify(next)}::jsonb) as v(id uuid, next_at timestamptz)
              where f.id = v.id`.execute(trx);
          }
          await insertRuns(runs);
          return { due: rows.length, refused };
        });
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
