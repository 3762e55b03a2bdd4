import type { z } from "zod";
import { PLATFORM_SCOPE } from "../broker/port.ts";
import type { Logger } from "../logger.ts";

/** How often and how patiently a failed entry is tried again. */
export interface RetryPolicy {
  /** Deliveries before the entry goes to the dead-letter stream (1: no retry). */
  maxAttempts: number;
  /** Delay before the second attempt; doubles with each further attempt. */
  backoffMs: number;
  /** Longest delay between attempts (default 60 s). */
  maxBackoffMs?: number;
}

/** A stream a consumer reads: its scope and name. */
export interface Queue {
  scope: string;
  stream: string;
}

/**
 * One stream consumer of the catalog. `name` is also the consumer group, so every
 * definition with its own name gets every entry of its stream; the members of one
 * definition (in this process and others) share them.
 */
export interface ConsumerDefinition<Schema extends z.ZodType = z.ZodType> {
  /** Unique in the catalog; the consumer group's name. */
  name: string;
  stream: string;
  /**
   * The scope the stream lives in (default `"platform"`): work queues are shared by
   * all accounts, the account travels in the payload.
   */
  scope?: string;
  /**
   * The streams it reads when its queue is split into partitions (the run queue): every
   * member serves all of them. Unset: `stream` in `scope`.
   */
  queues?: readonly Queue[];
  /** Payloads are JSON validated by this schema; one that fails goes straight to the dead-letter stream. */
  schema: Schema;
  /**
   * How long an entry may be held without a heartbeat before another member may take it
   * over. Members send heartbeats while they work, so this bounds the time to notice a
   * dead worker, not the length of a job.
   */
  visibilityTimeoutMs: number;
  retry: RetryPolicy;
  /** Members per process (default: the runtime's `concurrency`). */
  concurrency?: number;
  /**
   * Entries one member keeps in flight (default 1: one after another). Above 1 for handlers
   * that mostly wait (on the database, the network): one member keeps many entries going,
   * their writes can share statements, and a slow entry holds one slot rather than the member.
   */
  capacity?: number;
  /**
   * Set when producers append to lanes of the streams (see `LanePort`): a turn read is
   * admitted by the member, moving up to this many of its lane's entries onto the stream,
   * instead of going to the handler.
   */
  laneQuantum?: number;
}

/** The scope a consumer's stream lives in. */
export const scopeOf = (definition: ConsumerDefinition) => definition.scope ?? PLATFORM_SCOPE;

/** The streams a consumer reads. */
export const queuesOf = (definition: ConsumerDefinition): readonly Queue[] =>
  definition.queues ?? [{ scope: scopeOf(definition), stream: definition.stream }];

/** Declares a consumer with its payload type inferred from the schema. */
export function defineConsumer<Schema extends z.ZodType>(
  definition: ConsumerDefinition<Schema>,
): ConsumerDefinition<Schema> {
  return definition;
}

export interface HandlerContext {
  /**
   * The stream entry being handled (`<stream number>:<entry id>` for a consumer of several
   * streams); stable across deliveries, so usable as an idempotency key. Never holds `/`.
   */
  entryId: string;
  /** 1 on first delivery, then 2, 3, ... (a crash counts as an attempt). */
  attempt: number;
  /** The group member handling it. */
  member: string;
  /** Aborted when the runtime stops and its grace period is over: stop work, the entry will be retried elsewhere. */
  signal: AbortSignal;
  logger: Logger;
}

/**
 * Handles one payload. Resolve to acknowledge the entry; throw to have it retried
 * per the retry policy. Delivery is at least once: handlers must be idempotent.
 */
export type ConsumerHandler<Schema extends z.ZodType = z.ZodType> = (
  payload: z.output<Schema>,
  context: HandlerContext,
) => Promise<void>;

/** A consumer definition with its handler, as the runtime takes them. */
export interface WorkerConsumer {
  definition: ConsumerDefinition;
  handle: ConsumerHandler;
  /** Releases what the handler keeps (worker threads, say) once the runtime has stopped. */
  close?(): Promise<void>;
}
