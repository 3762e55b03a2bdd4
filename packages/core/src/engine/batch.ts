import type { Database } from "@platform/db";
import { type RawBuilder, sql, type Transaction } from "kysely";
import type { QueueReason } from "./queue-reasons.ts";
import { type ControlDeps, type EndedRun, tellEnded } from "./run-ends.ts";
import type { QueuedRun } from "./run-queue.ts";
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
 * leaves the run for the next delivery, and a start joins a batch only while it is open.
 */

const COLLECTING: QueueReason = "batch";

/** What a member's `end_reason` says. */
export const joinedBatch = (holder: string) => `joined batch run ${holder}`;

interface Batch {
  maxItems: number;
  timeoutMs: number;
}

/**
 * Closes the open batch `holder` (under its key's lock): its trigger becomes the list of its
 * members' data in acceptance order. A holder no delivery holds is woken now; the holder
 * answers its new trigger.
 */
async function close(trx: Transaction<Database>, holder: string): Promise<{ trigger: unknown; held: boolean }> {
  const { rows } = await sql<{ trigger: unknown; held: boolean }>`
    update runs set queue_reason = null,
      wake_at = case when held_by is null then now() else wake_at end,
      trigger = (
        select jsonb_agg(m.trigger order by m.created_at, m.id) from runs as m
        where m.id = ${holder} or (m.taken_by = ${holder} and m.status = 'batched'))
    where id = ${holder}
    returning trigger, held_by is not null as held`.execute(trx);
  return rows[0] as { trigger: unknown; held: boolean };
}

/**
 * Applies the batch to a claimed run (under `key`, its template's value; `maxBytes` is
 * TRIGGER_MAX_BYTES): the trigger to run with when it may go on (it holds a batch that is
 * closed now or was before this delivery: the list); undefined when it waits holding a batch,
 * ended in one, or is no longer this delivery's.
 */
export async function batchRun(
  deps: ControlDeps,
  run: ClaimedRun,
  batch: Batch,
  key: string,
  maxBytes: number,
): Promise<{ trigger: unknown } | undefined> {
  const woken: QueuedRun[] = [];
  /** This run, when it joined a batch, and why it ended. */
  let joined: { run: EndedRun; reason: string } | undefined;
  const decided = await deps.db.transaction().execute(async (trx): Promise<{ trigger: unknown } | undefined> => {
    await sql`select pg_advisory_xact_lock(hashtext(${`batch/${run.flowId}/${key}`}))`.execute(trx);
    // The run as it stands, and its key's open batch (read with it: one round trip for a start that joins).
    const { rows: own } = await sql<{
      opened: boolean;
      collecting: boolean;
      due: boolean;
      bytes: number;
      holder: string | null;
      holder_size: number | null;
      holder_bytes: string | number | null;
      holder_due: boolean | null;
    }>`
      select o.batch_key is not null as opened, o.queue_reason is not distinct from ${COLLECTING} as collecting,
        (o.batch_size >= ${batch.maxItems}
          or o.created_at + ${batch.timeoutMs}::integer * interval '1 millisecond' <= clock_timestamp()) is true as due,
        octet_length(o.trigger::text) as bytes,
        h.id as holder, h.batch_size as holder_size, h.batch_bytes as holder_bytes,
        h.created_at + ${batch.timeoutMs}::integer * interval '1 millisecond' <= o.created_at as holder_due
      from runs as o
      left join lateral (
        select id, batch_size, batch_bytes, created_at from runs
        where flow_id = ${run.flowId} and batch_key = ${key} and queue_reason = ${COLLECTING}
          and status in ('queued', 'running') and id <> ${run.id}
        order by created_at, id limit 1) as h on o.batch_key is null
      where o.id = ${run.id} and o.held_by = ${run.holder}`.execute(trx);
    const self = own[0];
    if (!self) return undefined;
    if (self.opened && !self.collecting) {
      // Closed by a start that joined or passed it, perhaps after this delivery read the run: the list is in the row.
      const { rows } = await sql<{ trigger: unknown }>`select trigger from runs where id = ${run.id}`.execute(trx);
      return { trigger: rows[0]?.trigger };
    }
    if (self.collecting) {
      if (self.due) return { trigger: (await close(trx, run.id)).trigger };
      // Woken before its time (a recovery's entry): it collects on.
      await hold(trx, run, batch, key, sql`batch_size`, sql`batch_bytes`);
      return undefined;
    }
    // First taken: it joins the key's open batch, unless that was due before this run was
    // accepted, or its list as JSON (each item, a separator, the brackets) would pass maxBytes.
    const holder = self.holder;
    const fits = Number(self.holder_bytes) + Number(self.bytes) + 4 <= maxBytes;
    if (holder === null || self.holder_due || !fits) {
      if (holder !== null && !(await close(trx, holder)).held) woken.push(queued(run, holder));
      await hold(trx, run, batch, key, sql`1`, sql`octet_length(trigger::text) + 2`);
      return undefined;
    }
    const { rows: member } = await sql<EndedRun>`
      with member as (
        update runs set status = 'batched', end_reason = ${joinedBatch(holder)}, taken_by = ${holder}::uuid,
          batch_key = ${key}, finished_at = now(), started_at = null, held_by = null, wake_at = null,
          queue_reason = null
        where id = ${run.id}
        returning id, waiter, parent_run_id),
      grown as (
        update runs set batch_size = batch_size + 1, batch_bytes = batch_bytes + ${Number(self.bytes) + 2}
        where id = ${holder} and exists (select 1 from member))
      select * from member`.execute(trx);
    if (member[0]) joined = { run: member[0], reason: joinedBatch(holder) };
    if (Number(self.holder_size) + 1 >= batch.maxItems && !(await close(trx, holder)).held) {
      woken.push(queued(run, holder));
    }
    return undefined;
  });
  // Also woken by the waker (`wake_at` now), should this process stop first.
  await deps.runQueue.requeue(woken);
  if (joined) await tellEnded(deps, [joined.run], () => joined?.reason ?? "");
  return decided;
}

/** The holder of a batch, as the run queue places it (a run of the same flow and account). */
const queued = (run: ClaimedRun, holder: string): QueuedRun => ({
  id: holder,
  flowId: run.flowId,
  accountId: run.accountId,
});

/** Gives a claimed run's claim back: it waits `queued` holding its key's batch until the batch is due. */
const hold = (
  trx: Transaction<Database>,
  run: ClaimedRun,
  batch: Batch,
  key: string,
  size: RawBuilder<unknown>,
  bytes: RawBuilder<unknown>,
) =>
  sql`
    update runs set batch_key = ${key}, batch_size = ${size}, batch_bytes = ${bytes}, queue_reason = ${COLLECTING},
      held_by = null, status = 'queued', started_at = null,
      wake_at = created_at + ${batch.timeoutMs}::integer * interval '1 millisecond'
    where id = ${run.id} and held_by = ${run.holder}`.execute(trx);
