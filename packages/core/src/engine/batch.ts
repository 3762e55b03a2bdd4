import { sql } from "kysely";
import { type ControlDeps, judgeInOrder, tellEnded } from "./run-ends.ts";
import type { ClaimedRun } from "./store.ts";

/**
 * Per-flow batches (`batch: {max_items, timeout_s, key?}`): starts of a key gather into one
 * run. Every start is a run accepted as any other, answered its own id; the batch applies
 * when a worker first takes it:
 *
 * - A run whose key has no open batch (or whose open batch was due before the run was
 *   accepted) opens one: it holds the batch (`batch_key`, `batch_size`, `batch_bytes`) and
 *   waits `queued` (`queue_reason`, `wake_at` = `timeout_s` after its acceptance).
 * - Otherwise it joins the open batch: it ends `batched` (`end_reason`, `taken_by` = the
 *   holder), its data to be run by the holder.
 * - A batch closes once it holds `max_items` starts (the start that fills it closes it),
 *   once `timeout_s` passed since its holder was accepted (the holder, woken then, closes
 *   it), or when the next start's data would make its list pass TRIGGER_MAX_BYTES (that start
 *   closes it and opens the next). Closing writes the holder's trigger: the list of the
 *   batch's trigger data in the order the starts were accepted, its own included. A holder
 *   closed by another start is queued at once.
 *
 * Decisions are taken one at a time per flow and key (a transaction-scoped advisory lock),
 * so a batch holds across every worker process; each commits with its writes, so a start is
 * in exactly one batch however workers die: a worker killed before its decision commits
 * leaves the run for the next delivery, and a start joins a batch only while it is open. The
 * starts a process takes together are judged in one statement (`batch_judge`, migration
 * 20261207000200, which holds the rules above; a group commit), in the order they came.
 */

/** What a member's `end_reason` says (`batch_judge` writes it: its prefix, then the holder's id). */
const JOINED_BATCH = "joined batch run ";
export const joinedBatch = (holder: string) => `${JOINED_BATCH}${holder}`;

interface Batch {
  maxItems: number;
  timeoutMs: number;
}

interface Start {
  run: Pick<ClaimedRun, "id" | "flowId" | "accountId" | "holder">;
  batch: Batch;
  key: string;
}

interface Judged {
  run: string;
  goes_on: boolean;
  trigger: unknown;
  joined: string | null;
  joined_waiter: string | null;
  joined_parent: string | null;
  woken: string | null;
}

/**
 * Batch decisions for one process: `take` applies the flow's batch to a claimed run (under
 * `key`, its template's value) and answers the trigger to run with when it may go on (it
 * holds a batch that is closed now or was before this delivery: the list); undefined when it
 * waits holding a batch, ended in one (whoever waits on it told), or is no longer this
 * delivery's. The holder of a batch a start closed is queued at once (and by the waker,
 * `wake_at` now, should this process stop first). `maxBytes` is TRIGGER_MAX_BYTES.
 */
export function createBatches(
  deps: ControlDeps,
  maxBytes: number,
): { take(run: Start["run"], batch: Batch, key: string): Promise<{ trigger: unknown } | undefined> } {
  const judge = judgeInOrder<Start, Judged>(async (starts) => {
    const items = starts.map(({ run, batch, key }) => ({
      run: run.id,
      holder: run.holder,
      flow: run.flowId,
      key,
      max_items: batch.maxItems,
      timeout_ms: batch.timeoutMs,
    }));
    const { rows } = await sql<Judged>`
        select run, goes_on, trigger, joined, joined_waiter, joined_parent, woken
        from batch_judge(${JSON.stringify(items)}::jsonb, ${maxBytes}::integer, ${JOINED_BATCH})`.execute(deps.db);
    return rows;
  });

  return {
    async take(run, batch, key) {
      const judged = await judge({ run, batch, key });
      // The holder runs as a run of the same flow and account.
      if (judged.woken)
        await deps.runQueue.requeue([{ id: judged.woken, flowId: run.flowId, accountId: run.accountId }]);
      if (judged.joined) {
        const member = { id: judged.run, waiter: judged.joined_waiter, parent_run_id: judged.joined_parent };
        await tellEnded(deps, [member], () => joinedBatch(judged.joined as string));
      }
      return judged.goes_on ? { trigger: judged.trigger } : undefined;
    },
  };
}
