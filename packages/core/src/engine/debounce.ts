import type { Database } from "@platform/db";
import { type RawBuilder, sql, type Transaction } from "kysely";
import type { QueueReason } from "./queue-reasons.ts";
import { type ControlDeps, type EndedRun, tellEnded } from "./run-ends.ts";
import type { ClaimedRun } from "./store.ts";

/**
 * Per-flow debounce (`debounce: {period_s, timeout_s?, key?}`): a start waits `period_s` of
 * quiet; a later start of its key within that time replaces it. Every start is a run
 * accepted as any other; the debounce applies when a worker first takes it:
 *
 * - A run whose key has no waiting run, or whose waiting run was already due when the run
 *   was accepted, waits `queued` (`queue_reason`, `wake_at` = when it is due) and opens a
 *   window (`debounce_since`: its acceptance).
 * - Otherwise the earlier-accepted of the two ends `skipped` (`end_reason`, `taken_by` = the
 *   later one), and the later one waits in the window, which keeps its beginning.
 * - A waiting run is due `period_s` after its own acceptance, or `timeout_s` after the window
 *   began, whichever is sooner: woken then, it goes on, and the runs it replaced, one by one
 *   down the window, are pointed at it (`taken_by`), the run that ran in their place.
 *
 * Times are the runs' acceptance (`created_at`, the database's clock), so the order workers
 * take them in does not change which one runs. Decisions are taken one at a time per flow and
 * key (a transaction-scoped advisory lock), so the debounce holds across every worker process;
 * a decision commits with the writes it makes, so a worker killed mid-way leaves the run as it
 * was for the next delivery, and a run ends skipped at most once and runs at most once.
 */

const WAITING_FOR_DEBOUNCE: QueueReason = "debounce";

/** What a replaced run's `end_reason` says. */
export const REPLACED_BY_DEBOUNCE = "replaced by a later start under the debounce";

interface Debounce {
  periodMs: number;
  /** From the window's beginning; null: a stream with no quiet postpones the run as long as it lasts. */
  timeoutMs: number | null;
}

/**
 * When a run accepted at `created` in a window begun at `since` is due (SQL over those two
 * expressions). Times stay in the database: a JavaScript Date would cut them to milliseconds.
 */
const dueAt = (debounce: Debounce, created: RawBuilder<unknown>, since: RawBuilder<unknown>) =>
  debounce.timeoutMs === null
    ? sql`${created} + ${debounce.periodMs}::integer * interval '1 millisecond'`
    : sql`least(${created} + ${debounce.periodMs}::integer * interval '1 millisecond',
        ${since} + ${debounce.timeoutMs}::integer * interval '1 millisecond')`;

/** Ends a run the debounce replaced: it never began, and the later start runs in its place. */
async function skip(trx: Transaction<Database>, id: string, key: string, by: string): Promise<EndedRun[]> {
  const { rows } = await sql<EndedRun>`
    update runs set status = 'skipped', end_reason = ${REPLACED_BY_DEBOUNCE}, taken_by = ${by}::uuid,
      debounce_key = ${key}, debounce_since = coalesce(debounce_since, created_at), finished_at = now(),
      started_at = null, held_by = null, wake_at = null, queue_reason = null
    where id = ${id}
    returning id, waiter, parent_run_id`.execute(trx);
  return rows;
}

/** Gives a claimed run's claim back: it waits `queued` in its key's window (begun at `since`) until it is due. */
const park = (
  trx: Transaction<Database>,
  run: ClaimedRun,
  debounce: Debounce,
  key: string,
  since: RawBuilder<unknown>,
) =>
  sql`
    update runs set debounce_key = ${key}, debounce_since = ${since}, queue_reason = ${WAITING_FOR_DEBOUNCE},
      held_by = null, status = 'queued', started_at = null,
      wake_at = ${dueAt(debounce, sql`created_at`, since)}
    where id = ${run.id} and held_by = ${run.holder}`.execute(trx);

/**
 * Applies the debounce to a claimed run (under `key`, its template's value): true when it
 * may go on (it was due, or went through before this delivery); false when it waits, or
 * ended replaced, or is no longer this delivery's (replaced meanwhile by a later start).
 */
export async function debounceRun(
  deps: ControlDeps,
  run: ClaimedRun,
  debounce: Debounce,
  key: string,
): Promise<boolean> {
  const replaced: EndedRun[] = [];
  const goesOn = await deps.db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(hashtext(${`debounce/${run.flowId}/${key}`}))`.execute(trx);
    // The run as it stands, and its key's latest waiting run unless that was due before this
    // run was accepted (read with it: one round trip for a start that replaces it).
    const { rows: own } = await sql<{
      opened: boolean;
      waiting: boolean;
      due: boolean;
      other: string | null;
      later: boolean | null;
    }>`
      select o.debounce_since is not null as opened, o.queue_reason is not distinct from ${WAITING_FOR_DEBOUNCE} as waiting,
        coalesce(${dueAt(debounce, sql`o.created_at`, sql`o.debounce_since`)} <= clock_timestamp(), false) as due,
        w.id as other, (w.created_at, w.id) > (o.created_at, o.id) as later
      from runs as o
      left join lateral (
        select id, created_at from runs
        where flow_id = ${run.flowId} and debounce_key = ${key} and queue_reason = ${WAITING_FOR_DEBOUNCE}
          and status in ('queued', 'running') and id <> ${run.id}
          and ${dueAt(debounce, sql`created_at`, sql`debounce_since`)} > o.created_at
        order by created_at desc, id desc limit 1) as w on o.debounce_since is null
      where o.id = ${run.id} and o.held_by = ${run.holder}`.execute(trx);
    const self = own[0];
    if (!self) return false;
    if (self.opened && !self.waiting) return true;
    if (self.waiting) {
      if (!self.due) {
        // Woken before its time (a recovery's entry): it waits on.
        await park(trx, run, debounce, key, sql`debounce_since`);
        return false;
      }
      await sql`update runs set queue_reason = null where id = ${run.id} and held_by = ${run.holder}`.execute(trx);
      // The runs it replaced, each pointed at the one that replaced it: now all at the one that runs.
      await sql`
        with recursive replaced as (
          select id from runs where taken_by = ${run.id} and status = 'skipped' and debounce_key is not null
          union all
          select r.id from runs as r join replaced as p on r.taken_by = p.id
          where r.status = 'skipped' and r.debounce_key is not null)
        update runs set taken_by = ${run.id}
        where id in (select id from replaced) and taken_by <> ${run.id}`.execute(trx);
      return true;
    }
    // First taken: it replaces the key's waiting run, or is replaced by it when taken after it.
    const accepted = sql`(select created_at from runs where id = ${run.id})`;
    const other = self.other;
    if (other === null) {
      await park(trx, run, debounce, key, sql`created_at`);
      return false;
    }
    // The window began with the earliest start in it.
    const since = sql`least((select debounce_since from runs where id = ${other}), ${accepted})`;
    if (!self.later) {
      await park(trx, run, debounce, key, since);
      replaced.push(...(await skip(trx, other, key, run.id)));
      return false;
    }
    // Taken after a later start of its key (workers took them out of order): it is the one replaced.
    await sql`
      update runs set debounce_since = ${since},
        wake_at = case when held_by is null then ${dueAt(debounce, sql`created_at`, since)} end
      where id = ${other}`.execute(trx);
    replaced.push(...(await skip(trx, run.id, key, other)));
    return false;
  });
  await tellEnded(deps, replaced, () => REPLACED_BY_DEBOUNCE);
  return goesOn;
}
