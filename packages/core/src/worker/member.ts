import type { Broker, DeliveredEntry } from "../broker/port.ts";
import { isDomainError, messageOf } from "../errors.ts";
import { groupCommit } from "../group-commit.ts";
import type { Logger } from "../logger.ts";
import { sleep } from "../sleep.ts";
import type { ConsumerDefinition, ConsumerHandler } from "./catalog.ts";
import { scopeOf } from "./catalog.ts";
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

/** How far a member is in reading its stream. */
interface ReadState {
  /** Whether its consumer group is known to exist. */
  groupReady: boolean;
  /** When to look for entries other members left idle again. */
  nextClaimAt: number;
  /** Failed reads in a row, for the back-off. */
  failures: number;
}

const newReadState = (): ReadState => ({ groupReady: false, nextClaimAt: 0, failures: 0 });

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
 */
export class GroupMember {
  private readonly scope: string;
  /** Entries read and not yet acknowledged, released or dead-lettered. */
  private readonly held = new Map<string, DeliveredEntry>();
  /** One per entry a handler is working on. */
  private readonly current = new Set<AbortController>();
  /** Entries being handled right now, settled or not. */
  private readonly inFlight = new Set<Promise<void>>();
  private abandoned = false;
  /** Acknowledges an entry; those settled together go in one call. */
  private readonly acknowledge: (id: string) => Promise<void>;

  constructor(private readonly options: MemberOptions) {
    this.scope = scopeOf(options.definition);
    const { broker, definition } = options;
    this.acknowledge = groupCommit<string, void>(
      async (ids) => {
        await broker.ack(this.scope, definition.stream, definition.name, ids);
        return ids.map(() => undefined);
      },
      { maxBatch: 1000, maxInFlight: 2 },
    );
  }

  async run(): Promise<void> {
    const { broker, definition, stopping, name, stats, logger } = this.options;
    const capacity = definition.capacity ?? 1;
    const heartbeat = setInterval(
      () => {
        const ids = [...this.held.keys()];
        if (ids.length > 0) broker.touch(this.scope, definition.stream, definition.name, name, ids).catch(() => {});
      },
      Math.max(10, Math.floor(definition.visibilityTimeoutMs / 3)),
    );
    let slotFreed: () => void = () => {};
    const start = (entry: DeliveredEntry) => {
      this.held.set(entry.id, entry);
      const handled = this.handleEntry(entry)
        .catch((error: unknown) => {
          // Left pending: another member (or this one) claims it after the visibility timeout.
          this.held.delete(entry.id);
          stats.brokerErrors++;
          logger.warn({ err: messageOf(error), member: name, entryId: entry.id }, "could not settle an entry");
        })
        .finally(() => {
          this.inFlight.delete(handled);
          slotFreed();
        });
      this.inFlight.add(handled);
    };
    const reading = newReadState();
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
          if (stopping.aborted || this.abandoned) await this.giveBack(batch.map((entry) => entry.id));
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
   * Up to `count` entries: those other members left idle first (looked for at most every
   * quarter of the visibility timeout, or at once while there are more), else new ones.
   */
  private async nextBatch(count: number, reading: ReadState): Promise<DeliveredEntry[]> {
    const { broker, definition, name, pollMs } = this.options;
    if (!reading.groupReady) {
      await broker.ensureGroup(this.scope, definition.stream, definition.name);
      reading.groupReady = true;
    }
    let batch: DeliveredEntry[] = [];
    if (Date.now() >= reading.nextClaimAt) {
      batch = await broker.claimIdle(
        this.scope,
        definition.stream,
        definition.name,
        name,
        definition.visibilityTimeoutMs,
        count,
      );
      if (batch.length < count) reading.nextClaimAt = Date.now() + claimEveryMs(definition);
    }
    if (batch.length === 0) {
      batch = await broker.readGroup(this.scope, definition.stream, definition.name, name, { count, blockMs: pollMs });
    }
    reading.failures = 0;
    return batch;
  }

  /** After a failed read: the group is made again if it was lost, and the member waits, longer each time. */
  private async backOff(error: unknown, reading: ReadState): Promise<void> {
    const { stats, logger, name, stopping } = this.options;
    if (isDomainError(error) && error.code === "not_found") reading.groupReady = false;
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
    const ids = [...this.held.keys()];
    this.held.clear();
    await this.giveBack(ids).catch((error) => {
      this.options.logger.warn(
        { err: messageOf(error), member: this.options.name },
        "could not release entries; they return after the visibility timeout",
      );
    });
  }

  /** Releases entries to other members at once. */
  private async giveBack(ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    const { broker, definition, name } = this.options;
    await broker.release(this.scope, definition.stream, definition.name, name, ids);
  }

  private async handleEntry(entry: DeliveredEntry): Promise<void> {
    const { broker, definition, stats, logger, name } = this.options;
    const { maxAttempts } = definition.retry;
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
    try {
      await this.options.handle(payload, {
        entryId: entry.id,
        attempt: entry.deliveries,
        member: name,
        signal: controller.signal,
        get logger() {
          entryLogger ??= logger.child({ consumer: definition.name, entryId: entry.id, attempt: entry.deliveries });
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
      await this.acknowledge(entry.id);
      this.held.delete(entry.id);
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
    // No longer held before it is given back: a heartbeat landing after the release would
    // reset its idle clock and postpone the retry to the full visibility timeout.
    this.held.delete(entry.id);
    await broker.release(
      this.scope,
      definition.stream,
      definition.name,
      name,
      [entry.id],
      Math.max(0, definition.visibilityTimeoutMs - delay),
    );
    stats.retried++;
  }

  private async giveUp(entry: DeliveredEntry, error: string): Promise<void> {
    const { broker, definition, stats, logger } = this.options;
    await deadLetter(broker, definition, entry, error);
    this.held.delete(entry.id);
    stats.deadLettered++;
    logger.error(
      { consumer: definition.name, entryId: entry.id, deliveries: entry.deliveries, err: error },
      "entry dead-lettered",
    );
  }
}
