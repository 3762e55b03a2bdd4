import type { DatabaseHandle, RunStatus } from "@platform/db";
import { sql } from "kysely";
import { groupCommit, ONE_STATEMENT_AT_A_TIME } from "../group-commit.ts";
import { type HeldSlot, handFreeSlots, handSlotsOver } from "./concurrency.ts";
import type { StepRecord, StepRecords } from "./records.ts";
import type { EntryRun, QueuedRun, RunQueue } from "./run-queue.ts";

/** A run as the worker takes it over. */
export interface ClaimedRun {
  id: string;
  accountId: string;
  flowId: string;
  revision: number;
  trigger: unknown;
  /** When a worker first took it (ISO); for a run taken from its entry, when this delivery did. */
  startedAt: string | null;
  /** The records of the steps it has begun, outputs of ended ones included. */
  steps: StepRecords;
  /** Bytes of outputs and error texts its steps have recorded (see record-budget.ts). */
  recordedBytes: number;
  waiter: string | null;
  /** The run whose `flow.call` started this one, and how deep the calls go (0 for none). */
  parentRunId: string | null;
  callDepth: number;
  /** `<entry id>/<delivery>`: the stream delivery that holds the run; every write names it. */
  holder: string;
  /**
   * False for a run taken from the entry that queued it, as it was accepted (see `fresh`):
   * not held in the database yet, its first write takes it.
   */
  claimed: boolean;
  /**
   * The concurrency key whose slot the run held when it was claimed (admitted earlier: handed
   * a slot, or kept it through its worker's crash), else null; see concurrency.ts.
   */
  heldSlotKey: string | null;
  /** The slot the run holds while it executes (set once admitted): its release hands it over. */
  slot?: HeldSlot;
  /** Its acceptance span's trace context (null: it was accepted without tracing). */
  traceparent: string | null;
}

/** What the entry that queues a run carries of it, so that its first delivery needs no read. */
export interface FreshRun {
  id: string;
  accountId: string;
  flowId: string;
  revision: number;
  trigger: unknown;
  waiter: string | null;
  parentRunId: string | null;
  callDepth: number;
  /** The concurrency key whose slot it was handed (its entry says so; see concurrency.ts). */
  slot?: string | undefined;
  /** Its acceptance span's trace context, when its entry carries one. */
  traceparent?: string | null;
}

/** A step whose record changed since the run's last write. */
export interface StepChange {
  name: string;
  record: StepRecord;
}

/** A checkpoint, a park or the end of a run, written by its holder. */
export interface RunWrite {
  id: string;
  holder: string;
  status: RunStatus;
  /**
   * The steps whose records changed since the last write, and only those: a record is
   * written with its output when it has succeeded (a step ends once, so its output is
   * written once), without it otherwise.
   */
  steps: StepChange[];
  error?: string | null;
  /** Parked until then (the waker queues it again). */
  wakeAt?: Date | null;
  /** Parked on these event keys too: an event with one wakes it (see events.ts). */
  waitingOn?: string[];
  /** Let go of the run (parked or ended): another delivery may take it. */
  release: boolean;
  /** The run ended: sets `finished_at`. */
  finished: boolean;
  /**
   * Take the run with this write (a run not `claimed` yet): it is written only if no delivery
   * has taken it since it was queued; `started_at` becomes `startedAt` and, as a claim does,
   * the holder's lease starts.
   */
  claim?: { startedAt: Date };
  /** What the run has recorded with this write (see record-budget.ts); absent, the row keeps its count. */
  recordedBytes?: number;
  /** The concurrency slot the run holds: a write that releases the run hands it to the oldest run waiting for one. */
  slot?: HeldSlot;
}

export interface RunStore {
  /**
   * Takes the run for a delivery of a stream entry: null when it has ended, does not exist,
   * or is held by a delivery of another entry. A later delivery of the same entry takes it
   * over (the earlier one's worker stopped answering).
   */
  claim(runId: string, entryId: string, delivery: number): Promise<ClaimedRun | null>;
  /**
   * The run as its queueing entry describes it, for that entry's first delivery: nothing is
   * read or written; the first write claims it (see `RunWrite.claim`).
   */
  fresh(run: FreshRun, entryId: string): ClaimedRun;
  /** Writes for the holder; false when the run is no longer its to write (taken over). */
  write(change: RunWrite): Promise<boolean>;
}

interface ClaimRow {
  id: string;
  account_id: string;
  flow_id: string;
  revision: number;
  trigger: unknown;
  steps: StepRecords | null;
  waiter: string | null;
  held_by: string;
  started_at: Date | null;
  parent_run_id: string | null;
  call_depth: number;
  recorded_bytes: string | number;
  held_slot_key: string | null;
  traceparent: string | null;
}

/** A run the write wrote, with the run it handed its slot to, if any (see `handSlotsOver`). */
interface WrittenRow {
  holder: string;
  flow_id: string;
  account_id: string;
  successor: string | null;
  successor_account: string | null;
  successor_revision: number | null;
  successor_waiter: string | null;
  successor_parent: string | null;
  successor_depth: number | null;
  /** Its trigger data as JSON, when it never began: its entry then describes it as accepted. */
  successor_trigger: string | null;
  successor_traceparent: string | null;
  slot_key: string | null;
}

/**
 * A write that was the holder's to write, and the run handed the slot it let go of (null:
 * none waited), with what its entry carries when it is to be taken unclaimed.
 */
interface Written {
  run: { flowId: string; accountId: string };
  successor: QueuedRun | EntryRun | null;
}

/** The run a write handed its slot to, as its entry is to carry it. */
function successorOf(row: WrittenRow): QueuedRun | EntryRun | null {
  const { successor: id, successor_account: accountId, flow_id: flowId } = row;
  if (!id || !accountId) return null;
  if (row.successor_trigger === null || row.successor_revision === null || row.slot_key === null) {
    return { id, flowId, accountId };
  }
  return {
    id,
    flowId,
    accountId,
    revision: row.successor_revision,
    waiter: row.successor_waiter,
    trigger: row.successor_trigger,
    parent: row.successor_parent ? { runId: row.successor_parent, depth: row.successor_depth ?? 0 } : undefined,
    slot: row.slot_key,
    traceparent: row.successor_traceparent,
  };
}

/** A step's row as the write sends it: its record without the output, and the output once it succeeded. */
export function stepRow({ name, record }: StepChange) {
  const { output, ...rest } = record;
  return { name, record: rest, output: record.status === "succeeded" ? (output ?? null) : null };
}

/**
 * The columns of the run's row a write sets, as the statements that write them read them
 * (`recorded_bytes` null: the row keeps its count): the write here, and the INSERT of a run
 * executed in place (engine/in-place.ts).
 */
export function endColumns(change: RunWrite) {
  return {
    status: change.status,
    error: change.error ?? null,
    wake_at: change.wakeAt?.toISOString() ?? null,
    waiting_on: change.waitingOn && change.waitingOn.length > 0 ? change.waitingOn : null,
    finished: change.finished,
    recorded_bytes: change.recordedBytes ?? null,
  };
}

/** A run as its queueing entry describes it, taken by its first write (see `RunStore.fresh`). */
export function freshRun({ slot, traceparent, ...run }: FreshRun, entryId: string): ClaimedRun {
  return {
    ...run,
    traceparent: traceparent ?? null,
    startedAt: new Date().toISOString(),
    steps: {},
    recordedBytes: 0,
    holder: `${entryId}/1`,
    claimed: false,
    heldSlotKey: slot ?? null,
  };
}

/**
 * The trigger data of runs as accepted, for entries that queue a run without it (see
 * `createRunQueue`): the reads of every delivery a process starts at one time go to the
 * database as one statement. Undefined for a run that is gone.
 */
export function createTriggerReader(database: DatabaseHandle): (runId: string) => Promise<unknown> {
  return groupCommit<string, unknown>(
    async (ids) => {
      const { rows } = await sql<{ id: string; trigger: unknown }>`
        select id, trigger from runs where id = any(${ids}::uuid[])`.execute(database.db);
      const byId = new Map(rows.map((row) => [row.id, row.trigger]));
      return ids.map((id) => byId.get(id));
    },
    { maxBatch: 500, maxInFlight: ONE_STATEMENT_AT_A_TIME },
  );
}

/**
 * The worker's reads and writes of run rows, each a group commit: the claims (and the
 * writes) of every run a process handles at one time go to the database as one statement.
 * A claim starts the holder's lease (`leaseMs`, see leases.ts) and reads the run's step
 * records back in the same statement. A write updates the run row (only while it is running
 * and the holder's: a run cancelled meanwhile refuses it) and upserts the rows of
 * the steps that changed (`run_steps`) in one statement, the steps only if the run row was
 * still the holder's to write. A write that claims (a fresh run's first) goes with the
 * others: it is taken only while still `queued` and held by nobody, and its `started_at`
 * is when the worker began it (within the row's acceptance and the write). A write that
 * releases a run lets go of its concurrency key; one of a run holding a slot hands it over
 * (concurrency.ts) in the same statement, and its successor is queued (`runQueue`) before the
 * write answers: a successor that never began as a new run is, its entry carrying it and the
 * slot it holds, so that its delivery executes it without a claim. Statements with no such write read no other run.
 *
 * Each statement names its runs twice: joined from the batch's JSON, and as an array of ids
 * (`r.id = any(...)`). PostgreSQL prunes the day partitions of runs (and of steps) to those
 * the array's ids fall in while it plans; a join alone is pruned only when it executes,
 * after every partition and its indexes were planned, which cost more than the write.
 */
export function createRunStore(database: DatabaseHandle, leaseMs: number, runQueue?: RunQueue): RunStore {
  const db = database.db;

  const claim = groupCommit<{ id: string; entry: string; holder: string }, ClaimRow | null>(
    async (items) => {
      const { rows } = await sql<ClaimRow>`
        with claimed as (
          update runs as r
          set status = 'running', started_at = coalesce(r.started_at, now()), held_by = v.holder, wake_at = null,
            lease_until = now() + ${leaseMs}::integer * interval '1 millisecond'
          from jsonb_to_recordset(${JSON.stringify(items)}::jsonb) as v(id uuid, entry text, holder text)
          where r.id = v.id and r.id = any(${items.map((item) => item.id)}::uuid[]) and r.status in ('queued', 'running')
            and (r.held_by is null or split_part(r.held_by, '/', 1) = v.entry)
          returning r.id, r.account_id, r.flow_id, r.revision, r.trigger, r.waiter, r.held_by, r.started_at,
            r.parent_run_id, r.call_depth, r.recorded_bytes, r.traceparent,
            case when r.queue_reason is null then r.slot_key end as held_slot_key
        )
        select c.*, (
          select jsonb_object_agg(
            s.name, case when s.output is null then s.record else s.record || jsonb_build_object('output', s.output) end)
          from run_steps as s where s.run_id = c.id and s.run_id = any(${items.map((item) => item.id)}::uuid[])
        ) as steps
        from claimed as c`.execute(db);
      // Two deliveries of one run in a batch: the row says which one took it.
      const byHolder = new Map(rows.map((row) => [row.held_by, row]));
      return items.map((item) => byHolder.get(item.holder) ?? null);
    },
    { maxBatch: 500, maxInFlight: ONE_STATEMENT_AT_A_TIME },
  );

  /** Each change goes in as its JSON (written once), with the holder that must still hold the run. */
  const write = groupCommit<{ id: string; holder: string; json: string; slot: boolean }, Written | null>(
    async (changes) => {
      const written = sql`
          update runs as r
          set status = v.status, error = v.error, wake_at = v.wake_at,
            waiting_on = case when v.waiting_on is null then null
              else array(select jsonb_array_elements_text(v.waiting_on)) end,
            held_by = case when v.release then null else v.holder end,
            slot_key = case when v.release then null else r.slot_key end,
            singleton_key = case when v.finished then null else r.singleton_key end,
            started_at = case when v.claim then least(greatest(v.started_at, r.created_at), now()) else r.started_at end,
            lease_until = case when v.claim then now() + ${leaseMs}::integer * interval '1 millisecond' else r.lease_until end,
            finished_at = case when v.finished then now() else r.finished_at end,
            recorded_bytes = coalesce(v.recorded_bytes, r.recorded_bytes)
          from jsonb_to_recordset(${`[${changes.map((change) => change.json).join(",")}]`}::jsonb) as v(
            id uuid, holder text, status text, error text, wake_at timestamptz, waiting_on jsonb, release boolean,
            finished boolean, claim boolean, started_at timestamptz, steps jsonb, recorded_bytes bigint, slot_key text)
          where r.id = v.id and r.id = any(${changes.map((change) => change.id)}::uuid[])
            and case when v.claim then r.status = 'queued' and r.held_by is null
              else r.held_by = v.holder and r.status = 'running' end
          returning r.id, r.flow_id, r.account_id, v.holder, v.steps, case when v.release then v.slot_key end as freed`;
      const steps = sql`
          insert into run_steps (run_id, name, record, output)
          select w.id, s.name, s.record, s.output
          from written as w cross join lateral jsonb_to_recordset(w.steps) as s(name text, record jsonb, output jsonb)
          on conflict (run_id, name) do update set record = excluded.record, output = excluded.output`;
      const { rows } = changes.some((change) => change.slot)
        ? await sql<WrittenRow>`
            with written as (${written}), steps as (${steps}),
            freeing as (
              select w.id, w.flow_id, w.freed as key, row_number() over (partition by w.flow_id, w.freed order by w.id) as n
              from written as w where w.freed is not null
            ),
            successors as (${handSlotsOver(sql`select flow_id, key, count(*) as n from freeing group by flow_id, key`)})
            select w.holder, w.flow_id, w.account_id, s.id as successor, s.account_id as successor_account,
              s.revision as successor_revision, s.waiter as successor_waiter, s.parent_run_id as successor_parent,
              s.call_depth as successor_depth, s.trigger as successor_trigger, s.key as slot_key,
              s.traceparent as successor_traceparent
            from written as w left join freeing as f on f.id = w.id
              left join successors as s on s.flow_id = f.flow_id and s.key = f.key and s.n = f.n`.execute(db)
        : await sql<WrittenRow>`
            with written as (${written}), steps as (${steps})
            select holder, flow_id, account_id, null as successor, null as successor_account from written`.execute(db);
      const byHolder = new Map(rows.map((row) => [row.holder, row]));
      return changes.map((change) => {
        const row = byHolder.get(change.holder);
        if (!row) return null;
        return { run: { flowId: row.flow_id, accountId: row.account_id }, successor: successorOf(row) };
      });
    },
    {
      maxBatch: 500,
      maxInFlight: ONE_STATEMENT_AT_A_TIME,
      maxBytes: 4 * 1024 * 1024,
      sizeOf: (change) => change.json.length,
    },
  );

  /** After a write that let go of a slot: its successor is queued, or, none found, the slots free now are handed. */
  async function passOn(slot: HeldSlot, { run, successor }: Written) {
    if (!runQueue) throw new Error("a run store that writes concurrency slots needs the run queue");
    if (successor && "trigger" in successor) await runQueue.append(successor);
    else if (successor) await runQueue.requeue([successor]);
    else await handFreeSlots({ db, runQueue }, run, slot);
  }

  return {
    async claim(runId, entryId, delivery) {
      const row = await claim({ id: runId, entry: entryId, holder: `${entryId}/${delivery}` });
      if (!row) return null;
      return {
        id: row.id,
        accountId: row.account_id,
        flowId: row.flow_id,
        revision: row.revision,
        trigger: row.trigger,
        startedAt: row.started_at ? new Date(row.started_at).toISOString() : null,
        steps: row.steps ?? {},
        recordedBytes: Number(row.recorded_bytes),
        waiter: row.waiter,
        parentRunId: row.parent_run_id,
        callDepth: row.call_depth,
        holder: row.held_by,
        claimed: true,
        heldSlotKey: row.held_slot_key,
        traceparent: row.traceparent,
      };
    },
    fresh: freshRun,
    async write(change) {
      const json = JSON.stringify({
        id: change.id,
        holder: change.holder,
        ...endColumns(change),
        steps: change.steps.map(stepRow),
        release: change.release,
        claim: change.claim !== undefined,
        started_at: change.claim?.startedAt.toISOString() ?? null,
        slot_key: change.slot?.key ?? null,
      });
      const slot = change.release ? change.slot : undefined;
      const result = await write({ id: change.id, holder: change.holder, json, slot: slot !== undefined });
      if (result && slot) await passOn(slot, result);
      return result !== null;
    },
  };
}
