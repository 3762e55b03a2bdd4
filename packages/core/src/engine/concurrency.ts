import type { Database } from "@platform/db";
import { type Kysely, type RawBuilder, sql } from "kysely";
import { messageOf } from "../errors.ts";
import { groupCommit, ONE_STATEMENT_AT_A_TIME } from "../group-commit.ts";
import { indexedKey } from "../indexed-key.ts";
import type { CompiledPayload } from "../templates/index.ts";
import { REQUEUE_AFTER, type RunQueue } from "./run-queue.ts";
import { StepFailure } from "./step-failure.ts";

/**
 * Per-flow concurrency limits (`concurrency: {limit, key?}`). A run of such a flow executes
 * only while it holds a slot of its key: a run not ended (`queued` or `running`) whose
 * `slot_key` is the key and that does not wait (`queue_reason` null). It holds it from the
 * moment it is admitted until it parks or ends (its write lets go of the key), whether or not
 * a worker holds the run right then: a run whose worker died keeps its slot until another
 * delivery takes it over and ends it, and a run handed a slot keeps it until its entry is
 * delivered. Slots change hands in two ways, both safe across every worker process:
 *
 * - Admission (`createSlotGate`): the runs a process asks slots for at one time are admitted
 *   in one transaction, under a transaction-scoped advisory lock per flow and key (taken in
 *   one order, so two batches never wait on each other), which counts the runs of each key
 *   holding a slot after the lock is held. A run is admitted while fewer than `limit` hold
 *   one and no run waits ahead of it; otherwise its claim is given back and it waits
 *   `queued` (`queue_reason`), with `wake_at` WAIT_RECHECK_MS ahead should every hand-over
 *   pass it by. Its place in the key's queue (`slot_order`) is its acceptance, moved earlier
 *   by its priority's seconds (priority.ts): without a priority, the oldest run is first.
 * - Hand-over (the run store's write, store.ts): the write that parks or ends a run holding
 *   a slot gives the slot, in the same statement, to the first run of the key's queue,
 *   which then holds it (the count of holders does not change, so no lock is needed), and
 *   appends that run to the run queue. When the write found no run waiting, one may have
 *   begun to wait while it was written, unseen: `handFreeSlots` then looks again under the
 *   key's lock, after the write committed, so that a slot freed while a run decided to wait
 *   is never lost on it.
 *
 * The key's holders and its waiting runs are read from partial indexes, so a slot costs the
 * same however many runs the flow has had. Admission and hand-over are functions whose
 * generic plans the session keeps (`slot_take`, `slot_hand_over`, `slot_hand_free`): no run
 * id tells them which day partitions of `runs` hold a key's runs. They write the waiting
 * reason out (`slot`, a QueueReason): the partial index of a key's queue is usable only
 * where the plan knows it.
 */

const WAIT_RECHECK_MS = 30_000;

/** The name of a key's advisory lock, under which its slots are admitted and handed free. */
const slotLock = (flowId: string, key: string) => `${flowId}/${key}`;

/**
 * The key a run counts against under a limit (a concurrency slot's, a throttle's): its
 * template's value as text, or "" when the limit is flow-wide, as the run's row keeps it
 * (`indexedKey`: trigger data may make it any length). A template that fails on the run's
 * data fails the same way every time: a failure not to be retried, naming the limit.
 */
export async function limitKeyOf(
  limit: { key: CompiledPayload | null },
  trigger: unknown,
  name: "concurrency" | "throttle" | "rate_limit" | "singleton" | "debounce" | "batch",
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

/** The slot a run holds under its flow's limit, as the consumer hands it to the run's writes. */
export interface HeldSlot {
  key: string;
  limit: number;
}

/** A held run of a limited flow asking for a slot of `key`. */
interface SlotAsk {
  id: string;
  holder: string;
  flow_id: string;
  key: string;
  lim: number;
  /** Its priority: seconds it moves ahead of the runs waiting with it. */
  ahead_s: number;
  /** Whether the asker holds the run already; else it asks for it as queued (taken from its entry). */
  claimed: boolean;
}

/** The run asking for a slot (store.ts's ClaimedRun, which holds the slot it gets). */
type SlotAsker = { id: string; flowId: string; accountId: string; holder: string; claimed: boolean };

/**
 * Slot admission for one process: `take` answers true when the run may execute (it holds a
 * slot of `key` now, or held one already: handed over, or kept through a crash), false when
 * it waits (its claim is given back, it is `queued` again unless it had begun, with the
 * reason). A run taken from its entry (not claimed) is asked for while `queued` and held by
 * nobody, and is left so: admitted, its first write claims it as a new run's does. The asks
 * of runs taken at one time share one transaction (a group commit).
 */
export function createSlotGate(db: Kysely<Database>): {
  take(run: SlotAsker, slot: HeldSlot, aheadS: number): Promise<boolean>;
} {
  // One statement (migration 20261208000100_slot_take): the keys' locks, then the admission under them.
  const take = groupCommit<SlotAsk, boolean>(
    async (asks) => {
      const keys = [...new Set(asks.map((ask) => slotLock(ask.flow_id, ask.key)))];
      const { rows } = await sql<{ holder: string; admitted: boolean }>`
        select holder, admitted
        from slot_take(${JSON.stringify(asks)}::jsonb, ${keys}::text[], ${WAIT_RECHECK_MS}::integer)`.execute(db);
      const admitted = new Map(rows.map((row) => [row.holder, row.admitted]));
      return asks.map((ask) => admitted.get(ask.holder) ?? false);
    },
    { maxBatch: 500, maxInFlight: ONE_STATEMENT_AT_A_TIME },
  );
  return {
    take(run, slot, aheadS) {
      return take({
        id: run.id,
        holder: run.holder,
        flow_id: run.flowId,
        key: slot.key,
        lim: slot.limit,
        ahead_s: aheadS,
        claimed: run.claimed,
      });
    },
  };
}

/**
 * The runs the write that frees slots of a key hands them to (`slot_hand_over`, migration
 * 20261209000100_slot_hand_over): per flow and key, as many runs from the front of the key's
 * queue as slots were freed (`freed`: rows of flow_id, key, n), locked so that two writes at
 * once hand them different runs, and set to hold the slot. Read by the run store's write
 * (store.ts), in its statement. A run that never began (`queued`, no `started_at`: the gate
 * clears it for a run it turns back before its first step) is read as accepted (`trigger`
 * as JSON text), so that its entry describes it as a new run's does (whether with its
 * trigger data is the run queue's to say: see `createRunQueue`) and its delivery takes it
 * unclaimed.
 */
export function handSlotsOver(freed: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`
    select * from slot_hand_over(
      (select coalesce(jsonb_agg(f), '[]'::jsonb) from (${freed}) as f), ${REQUEUE_AFTER}::interval)`;
}

/**
 * A slot of the key was freed by a write that found no run waiting for it: under the key's
 * lock, after that write committed, the runs at the front of its queue are handed the slots
 * free now (a run that decided to wait while the write was under way has committed its wait
 * by then). One statement (`slot_hand_free`, migration 20261209000100_slot_hand_over).
 */
export async function handFreeSlots(
  deps: { db: Kysely<Database>; runQueue: RunQueue },
  run: { flowId: string; accountId: string },
  slot: HeldSlot,
): Promise<void> {
  const { flowId } = run;
  const { rows } = await sql<{ id: string }>`
    select id from slot_hand_free(
      ${slotLock(flowId, slot.key)}, ${flowId}::uuid, ${slot.key}, ${slot.limit}::integer, ${REQUEUE_AFTER}::interval)`.execute(
    deps.db,
  );
  await deps.runQueue.requeue(rows.map((row) => ({ id: row.id, flowId, accountId: run.accountId })));
}

/**
 * Runs cancelled from outside their execution let go of their slots without a write of their
 * own (run-ends.ts's `cancelRuns`): once that has committed, each slot freed goes to the front
 * of its key's queue, under the limit the flow has now.
 */
export async function passOnSlots(
  deps: { db: Kysely<Database>; runQueue: RunQueue },
  cancelled: readonly { flow_id: string; account_id: string; slot_key: string | null }[],
): Promise<void> {
  const freed = new Map<string, { flowId: string; accountId: string; key: string }>();
  for (const run of cancelled) {
    if (run.slot_key !== null) {
      freed.set(`${run.flow_id}/${run.slot_key}`, {
        flowId: run.flow_id,
        accountId: run.account_id,
        key: run.slot_key,
      });
    }
  }
  for (const { flowId, accountId, key } of freed.values()) {
    const flow = await deps.db.selectFrom("flows").select("concurrency").where("id", "=", flowId).executeTakeFirst();
    if (flow?.concurrency) await handFreeSlots(deps, { flowId, accountId }, { key, limit: flow.concurrency.limit });
  }
}
