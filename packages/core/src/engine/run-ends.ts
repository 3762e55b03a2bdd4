import type { Database } from "@platform/db";
import { type Kysely, type RawBuilder, sql } from "kysely";
import type { Broker } from "../broker/port.ts";
import { groupCommit, ONE_STATEMENT_AT_A_TIME } from "../group-commit.ts";
import type { RunEvents } from "./events.ts";
import type { RunQueue } from "./run-queue.ts";
import { publishRunDone } from "./waiting.ts";

/**
 * Runs ended from outside their execution: cancelled (`POST /runs/{id}/cancel`, a singleton's
 * `cancel` mode, a start timeout) or ended by a flow control before they ran (`skipped`).
 * Who waits on such a run is told as a worker tells them of a run it ended (`tellEnded`).
 */

/** What a flow control that ends runs needs: the database, whom to tell, and the queue that slots freed send runs to. */
export interface ControlDeps {
  db: Kysely<Database>;
  broker: Broker;
  events: Pick<RunEvents, "wake">;
  runQueue: RunQueue;
}

/** A run ended here: whom to tell. */
export interface EndedRun {
  id: string;
  waiter: string | null;
  parent_run_id: string | null;
}

/** A run cancelled here, with the concurrency slot it let go of (`slot_key`: null when it held none). */
export interface CancelledRun extends EndedRun {
  flow_id: string;
  account_id: string;
  slot_key: string | null;
}

/** Why a flow control ended a run (the run view's `end_reason`), and the run that runs in its place. */
export interface EndReason {
  text: string;
  takenBy: string | null;
}

/**
 * Ends `cancelled` the queued or running runs `which` selects (runs already ended stay as they
 * were) and answers them. A step under way is not interrupted, but its worker can write
 * nothing more of the run (a write needs it `running` and held): its result is discarded and
 * no further step starts. It lets go of whatever it held or waited for (its slot, its wake);
 * one that had begun no step never started (a worker's claim before its first step is undone).
 * A slot it held is answered with it, for the caller to hand on once this has committed
 * (`passOnSlots`, concurrency.ts).
 */
export async function cancelRuns(
  db: Kysely<Database>,
  which: RawBuilder<boolean>,
  why: EndReason | null = null,
): Promise<CancelledRun[]> {
  const { rows } = await sql<CancelledRun>`
    with held as (
      select id as held_id, case when queue_reason is null then slot_key end as held_key
      from runs where ${which} and status in ('queued', 'running') for update)
    update runs
    set status = 'cancelled', error = 'cancelled', finished_at = now(), held_by = null, wake_at = null,
      waiting_on = null, slot_key = null, singleton_key = null, queue_reason = null, end_reason = ${why?.text ?? null},
      started_at = case when exists (select 1 from run_steps where run_id = runs.id) then started_at end,
      taken_by = ${why?.takenBy ?? null}::uuid
    from held
    where runs.id = held.held_id and ${which}
    returning id, waiter, parent_run_id, flow_id, account_id, held.held_key as slot_key`.execute(db);
  return rows;
}

/**
 * Most starts a flow control judges in one statement: the starts a worker takes together
 * are judged together (a group commit), as a key's lock lasts until the commit.
 */
export const MAX_STARTS_JUDGED_TOGETHER = 64;

/**
 * The group commit of a control whose function judges a batch of starts and answers one row
 * per start, in their order (`run`: the start's run id): each start is answered its own row,
 * so a run delivered twice in one batch hears the answer given to its own holder.
 */
export function judgeInOrder<S extends { run: { id: string } }, R extends { run: string }>(
  judge: (starts: S[]) => Promise<R[]>,
): (start: S) => Promise<R> {
  return groupCommit<S, R>(
    async (starts) => {
      const rows = await judge(starts);
      return starts.map(({ run }, index) => {
        const row = rows[index];
        if (row?.run !== run.id) throw new Error("a flow control's judgement answered its starts out of order");
        return row;
      });
    },
    { maxBatch: MAX_STARTS_JUDGED_TOGETHER, maxInFlight: ONE_STATEMENT_AT_A_TIME },
  );
}

/** A start a control judged (see admitOrSkip): admitted, or skipped, why, and whom to tell. */
type Judged = { admitted: true } | { admitted: false; skipped: EndedRun; reason: string };

/** A control's decision on one start, as `admitOrSkip` reads it. */
export type Decision = { id: string; holder: string; key: string; admit: boolean; reason: string };

/**
 * Under a flow control that admits or skips starts (a rate limit, a singleton), in one
 * statement for claimed runs: `judgement`, the CTE `decision`, gives for each run its `id`,
 * the `holder` that claimed it, the control's `key`, `admit` and the `reason` it would be
 * skipped for. Admitted (`admit`, or admitted before, by an earlier delivery), a run keeps
 * its key in `column`, the control's record of the runs it admitted; otherwise it ends
 * `skipped` with the reason, never started, holding and waiting for nothing. Answers each
 * run still held by its holder (`ids`, the runs judged, picks their partitions), by id.
 */
export async function admitOrSkip(
  db: Kysely<Database>,
  column: "rate_key" | "singleton_key",
  ids: string[],
  judgement: RawBuilder<Decision>,
): Promise<Map<string, Judged>> {
  const kept = sql.ref(`runs.${column}`);
  const admitted = sql`(decision.admit or ${kept} is not null)`;
  const { rows } = await sql<EndedRun & { admitted: boolean; reason: string }>`
    with decision as (${judgement})
    update runs set
      ${sql.ref(column)} = case when ${admitted} then decision.key end,
      status = case when ${admitted} then runs.status else 'skipped' end,
      end_reason = case when ${admitted} then runs.end_reason else decision.reason end,
      finished_at = case when ${admitted} then runs.finished_at else now() end,
      started_at = case when ${admitted} then runs.started_at end,
      held_by = case when ${admitted} then runs.held_by end,
      wake_at = case when ${admitted} then runs.wake_at end,
      queue_reason = case when ${admitted} then runs.queue_reason end
    from decision
    where runs.id = any(${ids}::uuid[]) and runs.id = decision.id and runs.held_by = decision.holder
    returning ${kept} is not null as admitted, decision.reason, runs.id, runs.waiter, runs.parent_run_id`.execute(db);
  return new Map(
    rows.map(({ admitted: yes, reason, ...run }) => [
      run.id,
      yes ? { admitted: true } : { admitted: false, skipped: run, reason },
    ]),
  );
}

/** A claimed run a control judges: held by the delivery named `holder`. */
interface JudgedRun {
  id: string;
  flowId: string;
  holder: string;
}

/**
 * Judges under one control the starts a process takes together, in one statement (a group
 * commit, as a key's lock lasts until the commit): `decide` is the statement's query of the
 * decisions (the CTE of `admitOrSkip`), given the starts as JSON, each its `run`, `holder`,
 * `flow`, `key` and the control's own `fields`, in the order they came. Answers, for a start,
 * true when it goes on; false when it was skipped (whoever waits on it told) or is no longer
 * its delivery's.
 */
export function judgeStartsTogether(
  deps: Pick<ControlDeps, "db" | "broker" | "events">,
  column: "rate_key" | "singleton_key",
  decide: (starts: string) => RawBuilder<Decision>,
): (run: JudgedRun, key: string, fields: Record<string, unknown>) => Promise<boolean> {
  const judge = groupCommit<{ run: JudgedRun; key: string; fields: Record<string, unknown> }, Judged | null>(
    async (starts) => {
      const ids = starts.map(({ run }) => run.id);
      const items = starts.map(({ run, key, fields }) => ({
        run: run.id,
        holder: run.holder,
        flow: run.flowId,
        key,
        ...fields,
      }));
      const judged = await admitOrSkip(deps.db, column, ids, decide(JSON.stringify(items)));
      return ids.map((id) => judged.get(id) ?? null);
    },
    { maxBatch: MAX_STARTS_JUDGED_TOGETHER, maxInFlight: ONE_STATEMENT_AT_A_TIME },
  );
  return async (run, key, fields) => {
    const decided = await judge({ run, key, fields });
    if (decided?.admitted === false) await tellEnded(deps, [decided.skipped], () => `skipped: ${decided.reason}`);
    return decided?.admitted === true;
  };
}

/**
 * Tells whoever waits on runs that ended without an outcome of their own: a process waiting
 * for one (wait mode) hears it failed with `error` (a lost notification is harmless: the
 * waiter reads the row when its wait is over); a run whose `flow.call` started one looks at
 * its end now.
 */
export async function tellEnded(
  deps: Pick<ControlDeps, "broker" | "events">,
  runs: EndedRun[],
  error: (run: EndedRun) => string,
): Promise<void> {
  for (const run of runs) {
    if (run.waiter) {
      await publishRunDone(deps.broker, run.waiter, {
        id: run.id,
        status: "failed",
        output: null,
        response: null,
        error: error(run),
      }).catch(() => undefined);
    }
    if (run.parent_run_id) await deps.events.wake(run.parent_run_id);
  }
}
