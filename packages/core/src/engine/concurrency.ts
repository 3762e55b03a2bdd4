import type { Database } from "@platform/db";
import { type Kysely, sql } from "kysely";
import { messageOf } from "../errors.ts";
import { indexedKey } from "../indexed-key.ts";
import type { CompiledPayload } from "../templates/index.ts";
import type { QueueReason } from "./queue-reasons.ts";
import type { QueuedRun, RunQueue } from "./run-queue.ts";
import { StepFailure } from "./step-failure.ts";
import type { ClaimedRun } from "./store.ts";

/**
 * Per-flow concurrency limits (`concurrency: {limit, key?}`). A run of such a flow executes
 * only while it holds a slot of its key: a claimed run (`held_by` set) whose `slot_key` is
 * the key and that does not wait (`queue_reason` null: a waiting run claimed again to try
 * for a slot holds none yet). Taking a slot is serialized per flow and key by a transaction-scoped advisory
 * lock, and counts the runs of the key that are held right now, so every worker process
 * sees the same count; a run whose worker died keeps its slot until another delivery takes
 * it over and ends it. A run that finds no slot free, or an older run of its key waiting,
 * gives its claim back and waits `queued` (`queue_reason`) (a run handed a freed slot does
 * not wait for older runs handed one too: each takes its own); a run that parks or ends frees its
 * slot, and the oldest waiting run of the key is queued at once (and every WAIT_RECHECK_MS
 * in any case, should that be lost). The key's live runs and its waiting runs are read from
 * partial indexes, so a slot costs the same however many runs the flow has had.
 */

const WAITING_FOR_SLOT: QueueReason = "slot";
const WOKEN_FOR_SLOT: QueueReason = "slot_woken";
const WAIT_RECHECK_MS = 30_000;

/**
 * The key a run counts against under a limit (a concurrency slot's, a throttle's): its
 * template's value as text, or "" when the limit is flow-wide, as the run's row keeps it
 * (`indexedKey`: trigger data may make it any length). A template that fails on the run's
 * data fails the same way every time: a failure not to be retried, naming the limit.
 */
export async function limitKeyOf(
  limit: { key: CompiledPayload | null },
  trigger: unknown,
  name: "concurrency" | "throttle" | "rate_limit" | "singleton",
): Promise<string> {
  if (!limit.key) return "";
  let value: unknown;
  try {
    value = await limit.key.resolve({ trigger });
  } catch (error) {
    throw new StepFailure(`${name}.key: ${messageOf(error)}`, false);
  }
  return indexedKey(
    value === null || value === undefined ? "" : typeof value === "string" ? value : JSON.stringify(value),
  );
}

/**
 * Takes a slot for a claimed run: true when it may execute; false when it waits (its claim
 * is given back, it is `queued` again unless it had begun, with the reason).
 */
export async function takeSlot(db: Kysely<Database>, run: ClaimedRun, limit: number, key: string): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(hashtext(${`${run.flowId}/${key}`}))`.execute(trx);
    const { rows } = await sql<{ id: string }>`
      update runs set slot_key = ${key}, queue_reason = null
      where id = ${run.id} and held_by = ${run.holder}
        and (select count(*) from runs as o
             where o.flow_id = ${run.flowId} and o.slot_key = ${key} and o.held_by is not null
               and o.queue_reason is null and o.status = 'running' and o.id <> ${run.id}) < ${limit}
        and not exists (select 1 from runs as w
             where w.flow_id = ${run.flowId} and w.slot_key = ${key} and w.status in ('queued', 'running')
               and w.id < ${run.id}
               and (w.queue_reason = ${WAITING_FOR_SLOT}
                 or (w.queue_reason = ${WOKEN_FOR_SLOT} and runs.queue_reason is distinct from ${WOKEN_FOR_SLOT})))
      returning id`.execute(trx);
    if (rows.length > 0) return true;
    await sql`
      update runs set slot_key = ${key}, queue_reason = ${WAITING_FOR_SLOT}, held_by = null,
        wake_at = now() + ${WAIT_RECHECK_MS}::integer * interval '1 millisecond',
        status = case when exists (select 1 from run_steps where run_id = runs.id) then status else 'queued' end,
        started_at = case when exists (select 1 from run_steps where run_id = runs.id) then started_at else null end
      where id = ${run.id} and held_by = ${run.holder}`.execute(trx);
    return false;
  });
}

/**
 * A slot of the key was freed (its run parked or ended; an ended run lets go of its key,
 * so the key's index holds live runs only): the oldest run waiting for one is queued now,
 * marked so that another slot freed meanwhile goes to the next one (two ends at once wake
 * two runs).
 */
export async function slotFreed(
  deps: { db: Kysely<Database>; runQueue: RunQueue },
  run: QueuedRun & { ended: boolean },
  key: string,
): Promise<void> {
  const flowId = run.flowId;
  const woken = await deps.db.transaction().execute(async (trx) => {
    // Under the key's lock: a run deciding to wait meanwhile has committed its wait before
    // this looks, so a slot freed while it decided is never lost on it.
    await sql`select pg_advisory_xact_lock(hashtext(${`${flowId}/${key}`}))`.execute(trx);
    if (run.ended) await sql`update runs set slot_key = null where id = ${run.id}`.execute(trx);
    const { rows } = await sql<{ id: string }>`
      update runs set queue_reason = ${WOKEN_FOR_SLOT}
      where id = (
        select id from runs
        where flow_id = ${flowId} and slot_key = ${key} and queue_reason = ${WAITING_FOR_SLOT}
          and status in ('queued', 'running')
        order by id limit 1 for update skip locked)
      returning id`.execute(trx);
    return rows;
  });
  await deps.runQueue.requeue(woken.map((row) => ({ id: row.id, flowId, accountId: run.accountId })));
}
