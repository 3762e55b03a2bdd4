import { type Broker, PLATFORM_SCOPE } from "../broker/port.ts";
import type { Queue } from "../worker/catalog.ts";

/** The name of every partition's stream; entries name the run (see `runEntrySchema`). */
export const RUN_STREAM = "runs";

/** A run as the queue places it: by its flow's partition, in its account's lane. */
export interface QueuedRun {
  id: string;
  flowId: string;
  accountId: string;
}

/**
 * The run queue: `partitions` streams (RUN_QUEUE_PARTITIONS). Partition 0 is the platform
 * scope's `runs` stream, the one queue of a deployment with one partition; partition `p`
 * above 0 lives in scope `platform-runs-<p>`, a hash tag of its own, so on a Redis Cluster
 * the partitions spread over the shards instead of one shard carrying every run. A run is
 * placed by its flow: the runs of a flow share a partition, so they are taken in the order
 * they were queued, as concurrency limits and throttles expect. Flows are placed by a
 * consistent hash (`jumpHash`): raising the count from n to n + 1 moves about 1/(n + 1) of them.
 *
 * Within a partition each account has a lane (see `LanePort`): its runs wait there, and the
 * stream the workers read holds at most `RUN_LANE_QUANTUM` runs of an account at a time, taken
 * in turns with every other account that has runs waiting. An account's backlog, however
 * long, holds another account's runs back by at most one turn.
 */
export interface RunQueue {
  /** The partitions' streams, by partition number. */
  readonly partitions: readonly Queue[];
  /** The partition a flow's runs go to. */
  partitionOf(flowId: string): number;
  /** Queues a run just accepted (or handed a concurrency slot), its entry describing it (see `entryOf`). */
  append(run: EntryRun): Promise<void>;
  /** Queues runs again by id: entries without the run as accepted, which the worker reads from the database. */
  requeue(runs: readonly QueuedRun[]): Promise<void>;
}

/**
 * Trigger data up to this size (JSON) travels in the run's stream entry when the queue's
 * entries carry triggers (see `createRunQueue`); larger trigger data stays in the row only.
 */
const MAX_ENTRY_TRIGGER_BYTES = 8 * 1024;

/** A run as the entry that queues it carries it, so that its delivery executes it without a read. */
export interface EntryRun extends QueuedRun {
  revision: number;
  waiter: string | null;
  /** The trigger data as JSON text. */
  trigger: string;
  /** The run whose `flow.call` step starts this one, and how deep the calls go. */
  parent?: { runId: string; depth: number } | undefined;
  /** The concurrency key whose slot the run was handed (see concurrency.ts). */
  slot?: string | undefined;
  /** Its acceptance span's trace context, which its spans continue (tracing/spans.ts). */
  traceparent?: string | null | undefined;
}

/**
 * The stream entry of a run (see `runEntrySchema`): the run as accepted, with its trigger data
 * when `withTrigger` and it is small; without, the worker reads the trigger from the run's row.
 */
function entryOf(run: EntryRun, withTrigger: boolean): string {
  const start = JSON.stringify({
    account: run.accountId,
    flow: run.flowId,
    revision: run.revision,
    waiter: run.waiter,
    ...(run.parent ? { parent: run.parent.runId, depth: run.parent.depth } : {}),
    ...(run.slot !== undefined ? { slot: run.slot } : {}),
    ...(run.traceparent ? { trace: run.traceparent } : {}),
  });
  if (!withTrigger || run.trigger.length > MAX_ENTRY_TRIGGER_BYTES) return `{"run":"${run.id}","start":${start}}`;
  return `{"run":"${run.id}","start":${start.slice(0, -1)},"trigger":${run.trigger}}}`;
}

/**
 * How far ahead `wake_at` is set for a run whose entry may be lost (appended by the waker, or
 * not yet by a background start: see runs/insert.ts): the waker queues it again then, and
 * again each time, until a worker's claim clears it.
 */
export const REQUEUE_AFTER = "2 minutes";

/** Runs of one account a turn moves onto a partition's stream (see `RunQueue`). */
export const RUN_LANE_QUANTUM = 32;

export const partitionScope = (partition: number) =>
  partition === 0 ? PLATFORM_SCOPE : `${PLATFORM_SCOPE}-runs-${partition}`;

/** FNV-1a of the flow id: stable across processes and releases. */
function hashOf(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

const UINT64 = (1n << 64n) - 1n;

/**
 * Lamping and Veach's jump consistent hash: the bucket of `key` among `buckets`, spread evenly,
 * and such that going from n to n + 1 buckets moves only the keys the new bucket takes (about
 * 1/(n + 1) of them), where `key % n` would move nearly all.
 */
export function jumpHash(key: number, buckets: number): number {
  let state = BigInt(key);
  let bucket = -1;
  let next = 0;
  while (next < buckets) {
    bucket = next;
    state = (state * 2862933555777941757n + 1n) & UINT64;
    next = Math.floor((bucket + 1) * (2 ** 31 / (Number(state >> 33n) + 1)));
  }
  return bucket;
}

/**
 * `entriesCarryTriggers`: whether entries carry the trigger data of the runs they queue, to
 * spare the worker a read of each run's row. Only where the stream is not in the database
 * that holds the runs (Redis): the PostgreSQL broker's streams and lanes are tables beside
 * runs, where an entry carrying the trigger only writes it a second time, and a third under a
 * backlog (the lane's entry, then the stream's), for a read of a row just written. Embedded
 * webhooks took 1,114 µs of CPU each with triggers in entries and 968 without (the means of
 * four rounds, alternated).
 */
export function createRunQueue(broker: Broker, partitionCount: number, entriesCarryTriggers = true): RunQueue {
  const partitions = Array.from({ length: partitionCount }, (_, partition) => ({
    scope: partitionScope(partition),
    stream: RUN_STREAM,
  }));
  const partitionOf = (flowId: string) => (partitionCount === 1 ? 0 : jumpHash(hashOf(flowId), partitionCount));
  const appendEntry = (run: QueuedRun, entry: string) => {
    const { scope, stream } = partitions[partitionOf(run.flowId)] as Queue;
    return broker.appendToLane(scope, stream, run.accountId, entry);
  };
  return {
    partitions,
    partitionOf,
    append: (run) => appendEntry(run, entryOf(run, entriesCarryTriggers)),
    async requeue(runs) {
      await Promise.all(runs.map((run) => appendEntry(run, JSON.stringify({ run: run.id }))));
    },
  };
}
