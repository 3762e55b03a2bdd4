import type { Database } from "@platform/db";
import { type Kysely, sql } from "kysely";
import type { QueueReason } from "./queue-reasons.ts";
import type { ClaimedRun } from "./store.ts";

/**
 * Per-flow throttles (`throttle: {limit, period_s, key?}`): at most `limit` runs of a key
 * start in any period. A run is given its turn once, the first time a worker takes it:
 * now, or, when `limit` turns of its key fall within the last period, one period after the
 * `limit`-th latest turn (whichever is later). Any window of one period then holds at most
 * `limit` turns, however the turns interleave, and a run whose turn lies ahead waits
 * `queued` until then (`wake_at` = its turn), so the excess starts in order, at the pace
 * the throttle allows, without workers trying again and again. Turns are given one at a
 * time per flow and key (a transaction-scoped advisory lock), so the throttle holds across
 * every worker process. A turn given to a run that is then cancelled stays spent.
 */

const WAITING_FOR_THROTTLE: QueueReason = "throttle";

/**
 * Gives a claimed run its turn, or reads the one it has: true when the turn has come and it
 * may go on; false when it waits (its claim is given back; it is `queued` again unless it
 * had begun, with the reason, until its turn).
 */
export async function takeTurn(
  db: Kysely<Database>,
  run: ClaimedRun,
  throttle: { limit: number; periodMs: number },
  key: string,
): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(hashtext(${`throttle/${run.flowId}/${key}`}))`.execute(trx);
    // The turn `limit` back frees a place one period after it (GREATEST passes over a null: none yet).
    const { rows } = await sql<{ due: boolean }>`
      with freed as (
        select t.throttle_at + ${throttle.periodMs}::integer * interval '1 millisecond' as at from runs as t
        where t.flow_id = ${run.flowId} and t.throttle_key = ${key} and t.throttle_at is not null
        order by t.throttle_at desc offset ${throttle.limit - 1} limit 1
      ),
      turn as (
        select at, at <= now as due from (
          select coalesce(r.throttle_at, greatest(clock_timestamp(), (select at from freed))) as at,
            clock_timestamp() as now
          from runs as r where r.id = ${run.id} and r.held_by = ${run.holder}) as given
      )
      update runs set
        throttle_key = ${key},
        throttle_at = turn.at,
        queue_reason = case
          when not turn.due then ${WAITING_FOR_THROTTLE}
          when queue_reason = ${WAITING_FOR_THROTTLE} then null
          else queue_reason end,
        held_by = case when turn.due then held_by end,
        wake_at = case when turn.due then wake_at else turn.at end,
        status = case when turn.due or exists (select 1 from run_steps where run_id = runs.id) then status
          else 'queued' end,
        started_at = case when turn.due or exists (select 1 from run_steps where run_id = runs.id) then started_at
          end
      from turn
      where runs.id = ${run.id} and runs.held_by = ${run.holder}
      returning turn.due`.execute(trx);
    return rows[0]?.due === true;
  });
}
