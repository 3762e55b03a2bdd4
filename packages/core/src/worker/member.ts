import { type Broker, type DeliveredEntry, type LaneTurn, laneTurnOf } from "../broker/port.ts";
import { isDomainError, messageOf } from "../errors.ts";
import { groupCommit } from "../group-commit.ts";
import type { Logger } from "../logger.ts";
import { sleep } from "../sleep.ts";
import type { ConsumerDefinition, ConsumerHandler, Queue } from "./catalog.ts";
import { queuesOf } from "./catalog.ts";
import { deadLetter } from "./dead-letter.ts";

/** Per-consumer figures of one runtime, since it started. */
export interface ConsumerStats {
  /** Entries handled successfully and acknowledged. */
  processed: number;
  /** Failed attempts handed back for a later retry. */
  retried: number;
  /** Entries moved to the dead-letter stream. */
  deadLettered: number;
  /** Entries being handled right now. */
  inFlight: number;
  /** Broker calls that failed (the member backs off and tries again). */
  brokerErrors: number;
}

export const emptyStats = (): ConsumerStats => ({
  processed: 0,
  retried: 0,
  deadLettered: 0,
  inFlight: 0,
  brokerErrors: 0,
});

export interface MemberOptions {
  broker: Broker;
  definition: ConsumerDefinition;
  handle: ConsumerHandler;
  /** This member's name in the group: unique per process and loop. */
  name: string;
  logger: Logger;
  stats: ConsumerStats;
  /** Longest blocking read, so a stop is noticed within it. */
  pollMs: number;
  /** Aborted when the runtime stops: read nothing more, finish the entry at hand. */
  stopping: AbortSignal;
}

/** Delay before attempt `attempt + 1`. */
export function backoffMs(retry: ConsumerDefinition["retry"], attempt: number): number {
  return Math.min(retry.maxBackoffMs ?? 60_000, retry.backoffMs * 2 ** Math.max(0, attempt - 1));
}

/** How far a member is in reading its streams. */
interface ReadState {
  /** Whether each stream's consumer group is known to exist. */
  groupReady: boolean[];
  /** When to look for entries other members left idle again. */
  nextClaimAt: number;
  /** The stream the next round of reads starts with: each round starts one further, so none is always last. */
  turn: number;
  /** Failed reads in a row, for the back-off. */
  failures: number;
}

const newReadState = (queues: number): ReadState => ({
  groupReady: new Array(queues).fill(false),
  nextClaimAt: 0,
  turn: 0,
  failures: 0,
});

/** An entry as a member holds it: with the number of the stream (of the consumer's queues) it came from. */
interface TakenEntry extends DeliveredEntry {
  queue: number;
}

/** The key an entry is held under: entry ids are unique per stream only. */
const heldKey = (entry: { queue: number; id: string }) => `${entry.queue}/${entry.id}`;

/**
 * With several streams, how long a member with nothing to do waits on one of them before
 * looking at all of them again: the longest delay a run queued on an idle deployment sees.
 */
const IDLE_WAIT_MS = 100;

/** How often a member looks for idle entries when it found fewer than it could take. */
const claimEveryMs = (definition: ConsumerDefinition) =>
  Math.min(1000, Math.max(50, Math.floor(definition.visibilityTimeoutMs / 4)));

/**
 * One member of a consumer group. It keeps up to `capacity` entries in flight (1: one
 * after another) and reads more as soon as some are done, claiming entries other members
 * left idle before new ones: a slow entry holds one slot, not the member. Each entry
 * settles on its own (acknowledged, retried or dead-lettered); a broker failure on one
 * leaves it pending, to be claimed again after the visibility timeout. While it holds
 * entries it sends heartbeats so nobody claims them.
 *
 * A consumer of several streams (the partitions of the run queue) is served by each
 * member, so members, not partitions × members, bound the connections a worker keeps
 * blocked: a member reads the streams one after another without blocking until its room
 * is full, starting each round one stream further (so each takes its turn first, and under
 * load one read fills the room: as few calls per entry as with one stream), and only when
 * all were empty blocks on one of them, a different one each time, for at most IDLE_WAIT_MS.
 */
export class GroupMember {
  private readonly queues: readonly Queue[];
  /** Entries read and not yet acknowledged, released or dead-lettered, by `heldKey`. */
  private readonly held = new Map<string, TakenEntry>();
  /** One per entry a handler is working on. */
  private readonly current = new Set<AbortController>();
  /** Entries being handled right now, settled or not. */
  private readonly inFlight = new Set<Promise<void>>();
  private abandoned = false;
  /** Acknowledges an entry; those settled together go in one call per stream. */
  private readonly acknowledge: (entry: TakenEntry) => Promise<void>;

  constructor(private readonly options: MemberOptions) {
    this.queues = queuesOf(options.definition);
    const { broker, definition } = options;
    this.acknowledge = groupCommit<TakenEntry, void>(
      async (entries) => {
        await this.eachQueue(entries, (queue, ids) => broker.ack(queue.scope, queue.stream, definition.name, ids));
        return entries.map(() => undefined);
      },
      { maxBatch: 1000, maxInFlight: 2 },
    );
  }

  /** Calls `work` once per stream with the ids of `entries` read from it. */
  private async eachQueue(
    entries: Iterable<TakenEntry>,
    work: (queue: Queue, ids: string[]) => Promise<unknown>,
  ): Promise<void> {
    const ids = new Map<number, string[]>();
    for (const entry of entries) {
      const list = ids.get(entry.queue);
      if (list) list.push(entry.id);
      else ids.set(entry.queue, [entry.id]);
    }
    await Promise.all([...ids].map(([queue, list]) => work(this.queues[queue] as Queue, list)));
  }

  async run(): Promise<void> {
    const { broker, definition, stopping, name, stats, logger } = this.options;
    const capacity = definition.capacity ?? 1;
    const heartbeat = setInterval(
      () => {
        this.eachQueue(this.held.values(), (queue, ids) =>
          broker.touch(queue.scope, queue.stream, definition.name, name, ids),
        ).catch(() => {});
      },
      Math.max(10, Math.floor(definition.visibilityTimeoutMs / 3)),
    );
    let slotFreed: () => void = () => {};
    const start = (entry: TakenEntry) => {
      this.held.set(heldKey(entry), entry);
      const handled = this.handleEntry(entry)
        .catch((error: unknown) => {
          // Left pending: another member (or this one) claims it after the visibility timeout.
          this.held.delete(heldKey(entry));
          stats.brokerErrors++;
          logger.warn({ err: messageOf(error), member: name, entryId: entry.id }, "could not settle an entry");
        })
        .finally(() => {
          this.inFlight.delete(handled);
          slotFreed();
        });
      this.inFlight.add(handled);
    };
    const reading = newReadState(this.queues.length);
    try {
      while (!stopping.aborted) {
        const room = capacity - this.inFlight.size;
        if (room <= 0) {
          await new Promise<void>((resolve) => {
            slotFreed = resolve;
          });
          continue;
        }
        try {
          const batch = await this.nextBatch(room, reading);
          // A read that came back after the stop began: nothing of it starts here.
          if (stopping.aborted || this.abandoned) await this.giveBack(batch);
          else for (const entry of batch) start(entry);
        } catch (error) {
          await this.backOff(error, reading);
        }
      }
      // Stopping: the entries at hand finish (or are abandoned when the grace is over).
      await Promise.all([...this.inFlight]);
    } finally {
      clearInterval(heartbeat);
    }
  }

  /**
   * Up to `count` entries: those other members left idle first (looked for at most every quarter of the visibility
   * timeout, or at once while there are more), else new ones.
   */
  private async nextBatch(count: number, reading: ReadState): Promise<TakenEntry[]> {
    const { broker, definition, name } = this.options;
    await Promise.all(
      this.queues.map(async (queue, index) => {
        if (reading.groupReady[index]) return;
        await broker.ensureGroup(queue.scope, queue.stream, definition.name);
        reading.groupReady[index] = true;
      }),
    );
    const order = this.queues.map((_, i) => (reading.turn + i) % this.queues.length);
    reading.turn = (reading.turn + 1) % this.queues.length;
    let batch: TakenEntry[] = [];
    if (Date.now() >= reading.nextClaimAt) {
      batch = await this.walk(order, count, ({ scope, stream }, wanted) =>
        broker.claimIdle(scope, stream, definition.name, name, definition.visibilityTimeoutMs, wanted),
      );
      if (batch.length < count) reading.nextClaimAt = Date.now() + claimEveryMs(definition);
    }
    if (batch.length === 0) batch = await this.readNew(order, count);
    reading.failures = 0;
    return batch;
  }

  /**
   * Takes from the streams in `order`, one after another, until `count` entries are taken
   * or every stream was asked once: under load the first stream fills the room in one call.
   */
  private async walk(
    order: number[],
    count: number,
    take: (queue: Queue, wanted: number) => Promise<DeliveredEntry[]>,
  ): Promise<TakenEntry[]> {
    const batch: TakenEntry[] = [];
    for (const queue of order) {
      const taken = await take(this.queues[queue] as Queue, count - batch.length);
      for (const entry of taken) batch.push({ ...entry, queue });
      if (batch.length >= count) break;
    }
    return batch;
  }

  /** New entries: see the class comment for how several streams are read. */
  private async readNew(order: number[], count: number): Promise<TakenEntry[]> {
    const { broker, definition, name, pollMs } = this.options;
    const read = (blockMs: number) => (queue: Queue, wanted: number) =>
      broker.readGroup(queue.scope, queue.stream, definition.name, name, { count: wanted, blockMs });
    if (order.length === 1) return this.walk(order, count, read(pollMs));
    const batch = await this.walk(order, count, read(0));
    if (batch.length > 0) return batch;
    return this.walk(order.slice(0, 1), count, read(Math.min(pollMs, IDLE_WAIT_MS)));
  }

  /** After a failed read: the group is made again if it was lost, and the member waits, longer each time. */
  private async backOff(error: unknown, reading: ReadState): Promise<void> {
    const { stats, logger, name, stopping } = this.options;
    // Which stream lost its group is not said: making each again costs one call per stream.
    if (isDomainError(error) && error.code === "not_found") reading.groupReady.fill(false);
    stats.brokerErrors++;
    reading.failures++;
    logger.warn({ err: messageOf(error), member: name }, "consumer loop failed; backing off");
    await sleep(Math.min(5000, 100 * 2 ** Math.min(reading.failures, 6)), stopping);
  }

  /**
   * Gives up what this member holds: aborts the handlers at work and releases every held
   * entry so another member takes it at once. The runtime calls this when its grace is over.
   */
  async abandon(): Promise<void> {
    this.abandoned = true;
    for (const controller of this.current) controller.abort(new Error("the worker is shutting down"));
    const entries = [...this.held.values()];
    this.held.clear();
    await this.giveBack(entries).catch((error) => {
      this.options.logger.warn(
        { err: messageOf(error), member: this.options.name },
        "could not release entries; they return after the visibility timeout",
      );
    });
  }

  /** Releases entries to other members at once. */
  private async giveBack(entries: TakenEntry[]): Promise<void> {
    const { broker, definition, name } = this.options;
    await this.eachQueue(entries, (queue, ids) =>
      broker.release(queue.scope, queue.stream, definition.name, name, ids),
    );
  }

  private async handleEntry(entry: TakenEntry): Promise<void> {
    const { definition, stats, logger, name } = this.options;
    const { maxAttempts } = definition.retry;
    const turn = definition.laneQuantum === undefined ? null : laneTurnOf(entry.payload);
    if (turn) return this.admit(entry, turn, definition.laneQuantum as number);
    if (entry.deliveries > maxAttempts) {
      // Delivered more often than attempts were made: its handlers never finished (crashes).
      await this.giveUp(entry, `no outcome after ${entry.deliveries - 1} deliveries (did the worker crash?)`);
      return;
    }
    let payload: unknown;
    try {
      payload = definition.schema.parse(JSON.parse(entry.payload));
    } catch (error) {
      await this.giveUp(entry, `invalid payload: ${messageOf(error)}`);
      return;
    }

    const controller = new AbortController();
    this.current.add(controller);
    stats.inFlight++;
    let failure: unknown;
    let failed = false;
    // The entry's logger is made when first used: most entries log nothing.
    let entryLogger: Logger | undefined;
    // Stable across deliveries and unique across the consumer's streams (ids are unique per stream).
    const entryId = this.queues.length > 1 ? `${entry.queue}:${entry.id}` : entry.id;
    try {
      await this.options.handle(payload, {
        entryId,
        attempt: entry.deliveries,
        member: name,
        signal: controller.signal,
        get logger() {
          entryLogger ??= logger.child({ consumer: definition.name, entryId, attempt: entry.deliveries });
          return entryLogger;
        },
      });
    } catch (error) {
      failed = true;
      failure = error;
    } finally {
      stats.inFlight--;
      this.current.delete(controller);
    }
    if (this.abandoned) return; // released already; another member owns it now

    if (!failed) {
      await this.acknowledge(entry);
      this.held.delete(heldKey(entry));
      stats.processed++;
      return;
    }
    if (entry.deliveries >= maxAttempts) {
      await this.giveUp(entry, messageOf(failure));
      return;
    }
    const delay = backoffMs(definition.retry, entry.deliveries);
    logger.warn(
      {
        consumer: definition.name,
        entryId: entry.id,
        attempt: entry.deliveries,
        retryInMs: delay,
        err: messageOf(failure),
      },
      "handler failed; will retry",
    );
    await this.retryLater(entry, delay);
  }

  /** Gives an entry back to be delivered again after `delayMs`. */
  private async retryLater(entry: TakenEntry, delayMs: number): Promise<void> {
    const { broker, definition, name, stats } = this.options;
    // No longer held before it is given back: a heartbeat landing after the release would
    // reset its idle clock and postpone the retry to the full visibility timeout.
    this.held.delete(heldKey(entry));
    const queue = this.queues[entry.queue] as Queue;
    await broker.release(
      queue.scope,
      queue.stream,
      definition.name,
      name,
      [entry.id],
      Math.max(0, definition.visibilityTimeoutMs - delayMs),
    );
    stats.retried++;
  }

  /**
   * Admits a lane's turn: its next entries go onto the stream, and the turn is acknowledged.
   * A turn is never dead-lettered, whatever its deliveries: its lane would wait for good. It
   * fails only when the broker does, and is tried again after the usual backoff.
   */
  private async admit(entry: TakenEntry, turn: LaneTurn, quantum: number): Promise<void> {
    const { broker, definition, logger } = this.options;
    const queue = this.queues[entry.queue] as Queue;
    try {
      await broker.admitLane(queue.scope, queue.stream, turn, quantum);
    } catch (error) {
      logger.warn(
        { consumer: definition.name, lane: turn.lane, err: messageOf(error) },
        "could not admit a lane's turn",
      );
      await this.retryLater(
        entry,
        backoffMs(definition.retry, Math.min(entry.deliveries, definition.retry.maxAttempts)),
      );
      return;
    }
    await this.acknowledge(entry);
    this.held.delete(heldKey(entry));
  }

  private async giveUp(entry: TakenEntry, error: string): Promise<void> {
    const { broker, definition, stats, logger } = this.options;
    await deadLetter(broker, definition, entry, error, this.queues[entry.queue] as Queue);
    this.held.delete(heldKey(entry));
    stats.deadLettered++;
    logger.error(
      { consumer: definition.name, entryId: entry.id, deliveries: entry.deliveries, err: error },
      "entry dead-lettered",
    );
  }
}
