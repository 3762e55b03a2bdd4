import { sql } from "kysely";
import { type ControlDeps, judgeInOrder, tellEnded } from "./run-ends.ts";
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
 * was for the next delivery, and a run ends skipped at most once and runs at most once. The
 * starts a process takes together are judged in one statement (`debounce_judge`, migration
 * 20261207000000, which holds the rules above; a group commit), in the order they came.
 */

/** What a replaced run's `end_reason` says. */
export const REPLACED_BY_DEBOUNCE = "replaced by a later start under the debounce";

interface Debounce {
  periodMs: number;
  /** From the window's beginning; null: a stream with no quiet postpones the run as long as it lasts. */
  timeoutMs: number | null;
}

interface Start {
  run: Pick<ClaimedRun, "id" | "flowId" | "holder">;
  debounce: Debounce;
  key: string;
}

interface Judged {
  run: string;
  goes_on: boolean;
  ended: string | null;
  ended_waiter: string | null;
  ended_parent: string | null;
}

/**
 * Debounce decisions for one process: `take` applies the flow's debounce to a claimed run
 * (under `key`, its template's value) and answers true when it may go on (it was due, or
 * went through before this delivery); false when it waits, or ended replaced, or is no
 * longer this delivery's (replaced meanwhile by a later start). A run it ended replaced is
 * told to whoever waits on it.
 */
export function createDebounces(deps: ControlDeps): {
  take(run: Start["run"], debounce: Debounce, key: string): Promise<boolean>;
} {
  const judge = judgeInOrder<Start, Judged>(async (starts) => {
    const items = starts.map(({ run, debounce, key }) => ({
      run: run.id,
      holder: run.holder,
      flow: run.flowId,
      key,
      period_ms: debounce.periodMs,
      timeout_ms: debounce.timeoutMs,
    }));
    const { rows } = await sql<Judged>`
        select run, goes_on, ended, ended_waiter, ended_parent
        from debounce_judge(${JSON.stringify(items)}::jsonb, ${REPLACED_BY_DEBOUNCE})`.execute(deps.db);
    return rows;
  });

  return {
    async take(run, debounce, key) {
      const judged = await judge({ run, debounce, key });
      if (judged.ended) {
        const ended = { id: judged.ended, waiter: judged.ended_waiter, parent_run_id: judged.ended_parent };
        await tellEnded(deps, [ended], () => REPLACED_BY_DEBOUNCE);
      }
      return judged.goes_on;
    },
  };
}
