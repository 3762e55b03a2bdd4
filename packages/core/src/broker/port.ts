/**
 * The Broker port: durable streams with consumer groups, key-value buckets, counters,
 * a sliding-window rate limiter and notifications, behind one interface with two
 * adapters (Redis Streams for scale-out, PostgreSQL/PGlite for embedded mode).
 *
 * Scoping: every method takes `scope` first. It is the account id, or a platform-level
 * scope such as `"platform"` (work queues shared by all accounts, login attempts that
 * precede an account). In Redis the scope becomes the hash tag of every key
 * (`{scope}:...`) so a cluster shards by account; in PostgreSQL it is a column of every
 * broker table. Scopes, stream, bucket, key and channel names are arbitrary non-empty
 * strings; adapters escape them.
 *
 * Failures: when the backend cannot be reached every method rejects promptly with
 * `DomainError("unavailable")` (503 at the HTTP edge) instead of waiting for it to
 * come back. Misuse (a group that does not exist, a bad argument) rejects with
 * `DomainError("not_found" | "validation_error")`.
 *
 * Delivery: streams are at-least-once. An entry read by a group member stays pending
 * until acknowledged; if its consumer dies, another member takes it with `claimIdle`
 * once it has been idle (neither acked nor touched) longer than the claimant's deadline.
 * No entry is held by two members of one group at once.
 */

/** Which backend a broker runs on. */
export type BrokerKind = "redis" | "postgres";

/** An account id, or a platform-level scope such as `"platform"`. */
export type Scope = string;

/** The scope for platform-level work (queues every account shares, pre-login limits). */
export const PLATFORM_SCOPE = "platform";

/** One stream entry as stored. */
export interface StreamEntry {
  /**
   * Sequence id assigned by `append`, increasing within a stream. Opaque: compare
   * only through the broker (pass it back as `after`); formats differ per adapter
   * (Redis `"1700000000000-0"`, PostgreSQL `"42"`).
   */
  id: string;
  /** The appended payload, byte for byte (callers usually store JSON). */
  payload: string;
  /** When the entry was appended, in epoch milliseconds. */
  timestamp: number;
}

/** An entry handed to a group member. */
export interface DeliveredEntry extends StreamEntry {
  /** How many times this entry has been handed to a member of the group, this time included (1 on first read). */
  deliveries: number;
}

export interface ReadGroupOptions {
  /** At most this many entries (default 1). */
  count?: number;
  /** Wait up to this long for a new entry when none is available (default 0: return at once). */
  blockMs?: number;
}

export interface EnsureGroupOptions {
  /** Where a group created now starts: `"beginning"` (every entry in the stream) or `"end"` (only entries appended later). Default `"beginning"`. */
  startAt?: "beginning" | "end";
}

export interface TrimOptions {
  /** Keep at most this many newest entries. */
  maxLength?: number;
  /** Remove entries appended more than this many milliseconds ago. */
  maxAgeMs?: number;
}

/** A member of a consumer group, as the broker knows it. */
export interface GroupConsumer {
  name: string;
  /** Entries it holds: delivered to it, not yet acknowledged. */
  pending: number;
  /** Milliseconds since it last read, claimed or touched entries (by the backend's clock). */
  idleMs: number;
}

/** An entry of a numbered stream (see `appendNumbered`). */
export interface NumberedEntry {
  /** The entry's number in its stream: 1 for the first entry appended, then one more for each. */
  seq: number;
  /** The appended payload, byte for byte. */
  payload: string;
  /** When the entry was appended, in epoch milliseconds. */
  timestamp: number;
}

export interface ReadNumberedOptions {
  /** Only entries numbered above this (default 0: from the oldest entry kept). */
  afterSeq?: number;
  /** At most this many entries (default 100). */
  limit?: number;
}

/**
 * The most a write may bring its scope to: KV bytes (keys and values of every bucket),
 * or numbered-stream bytes (payloads) and entries of the stream written. A write that
 * would pass one writes nothing and rejects with `QuotaExceeded`.
 */
export interface StreamQuota {
  /** Most bytes of payload the scope's numbered streams keep together. */
  maxBytes?: number;
  /** Most entries the stream keeps (checked before the append's own trim). */
  maxEntries?: number;
}

/** What a scope keeps: bytes of KV keys and values, bytes of numbered-stream payloads. */
export interface StorageUsage {
  kvBytes: number;
  streamBytes: number;
}

/** A write refused by its quota; nothing was written. */
export class QuotaExceeded extends Error {
  override name = "QuotaExceeded";
  constructor(
    /** Which quota: bytes of the scope's storage, or entries of the stream. */
    readonly quota: "bytes" | "entries",
    /** The scope's (or stream's) use before the write. */
    readonly used: number,
    readonly limit: number,
  ) {
    super(`the write would pass the ${quota} quota (${used} used of ${limit})`);
  }
}

export interface ReadRangeOptions {
  /** Only entries after this id (exclusive); from the start of the stream when omitted. */
  after?: string;
  /** At most this many entries (default 100). */
  limit?: number;
}

export interface StreamPort {
  /** Appends one entry and returns its id. Creates the stream when it does not exist. */
  append(scope: Scope, stream: string, payload: string): Promise<string>;
  /** Creates the consumer group if it does not exist (and the stream with it); an existing group is left as it is. */
  ensureGroup(scope: Scope, stream: string, group: string, options?: EnsureGroupOptions): Promise<void>;
  /**
   * Hands never-delivered entries, oldest first, to `consumer` of `group`; they stay
   * pending for it until acked, touched, released or claimed by another member.
   * Rejects with `not_found` when the group does not exist.
   */
  readGroup(
    scope: Scope,
    stream: string,
    group: string,
    consumer: string,
    options?: ReadGroupOptions,
  ): Promise<DeliveredEntry[]>;
  /** Acknowledges entries: they leave the group's pending list. Returns how many were pending. */
  ack(scope: Scope, stream: string, group: string, ids: string[]): Promise<number>;
  /**
   * Takes over up to `count` pending entries of the group idle for at least `minIdleMs`
   * (their consumer died, or released them), oldest first, and hands them to `consumer`
   * with their delivery count increased. Entries trimmed away meanwhile are dropped from
   * the pending list and not returned.
   */
  claimIdle(
    scope: Scope,
    stream: string,
    group: string,
    consumer: string,
    minIdleMs: number,
    count: number,
  ): Promise<DeliveredEntry[]>;
  /** Resets the idle clock of entries `consumer` holds (a heartbeat for long work). Returns how many it still held. */
  touch(scope: Scope, stream: string, group: string, consumer: string, ids: string[]): Promise<number>;
  /**
   * Gives entries back without acknowledging them: they count as idle for `idleMs`
   * already, so a member claiming with `minIdleMs` takes them after `minIdleMs - idleMs`.
   * Omit `idleMs` to make them claimable at once. Delivery counts are not changed. Only
   * entries `consumer` holds are given back.
   */
  release(scope: Scope, stream: string, group: string, consumer: string, ids: string[], idleMs?: number): Promise<void>;
  /** How many entries the group has delivered and not yet acknowledged (0 for an unknown group). */
  pendingCount(scope: Scope, stream: string, group: string): Promise<number>;
  /**
   * The group's members, by name: every member holding entries, and, on an adapter that
   * remembers members (Redis keeps every name that ever read), those holding none as well.
   * Empty for an unknown stream or group.
   */
  consumers(scope: Scope, stream: string, group: string): Promise<GroupConsumer[]>;
  /**
   * Forgets members that hold no entries and have been idle for at least `minIdleMs`: the
   * names of workers that stopped or died (whose entries were claimed by others first).
   * A member holding entries is never removed, and the check and the removal are one step,
   * so a member that reads meanwhile keeps what it read. A removed member that reads
   * again simply joins again. Returns the names removed (none for an unknown stream or
   * group, and none on an adapter that keeps no member without entries).
   */
  removeIdleConsumers(scope: Scope, stream: string, group: string, minIdleMs: number): Promise<string[]>;
  /**
   * Removes the entries every consumer group of the stream is done with: those before each
   * group's oldest pending entry and at or before its read position. Entries not yet read,
   * or read and not acknowledged, by any group stay. A stream without groups keeps all.
   * For work queues, whose acknowledged entries are of no further use. Returns how many
   * entries were removed.
   */
  trimAcknowledged(scope: Scope, stream: string): Promise<number>;
  /** How many entries the stream holds (0 when it does not exist). */
  length(scope: Scope, stream: string): Promise<number>;
  /** Removes the oldest entries beyond `maxLength` and/or older than `maxAgeMs`; returns how many were removed. */
  trim(scope: Scope, stream: string, options: TrimOptions): Promise<number>;
  /** Reads entries in order without a group (`GET /storage/streams/{name}/messages`). */
  readRange(scope: Scope, stream: string, options?: ReadRangeOptions): Promise<StreamEntry[]>;
  /** Deletes the stream with its entries and groups. Returns whether it existed. */
  deleteStream(scope: Scope, stream: string): Promise<boolean>;
  /**
   * Appends one entry to a numbered stream and returns its number: 1, 2, 3, ... in append
   * order, with no gaps. Trimming does not renumber; a deleted stream starts again at 1.
   * `trim` is applied right after the append, in the same call (one round trip on Redis).
   * A stream is numbered for its whole life or never: do not mix `append` and
   * `appendNumbered` on one stream (on Redis the second kind fails). Every other stream
   * method works on numbered streams too.
   */
  appendNumbered(
    scope: Scope,
    stream: string,
    payload: string,
    trim?: TrimOptions,
    quota?: StreamQuota,
  ): Promise<number>;
  /** Entries of a numbered stream, oldest first, by number. */
  readNumbered(scope: Scope, stream: string, options?: ReadNumberedOptions): Promise<NumberedEntry[]>;
}

/**
 * A lane's turn: the entry `appendToLane` (or `admitLane`) puts on the stream for a lane with
 * entries waiting. Its payload is `{"lane":<lane>,"turn":<n>}` (see `laneTurnOf`).
 */
export interface LaneTurn {
  lane: string;
  /** Increases with each turn of the lane; a turn whose number is not the lane's current one is stale (a duplicate). */
  turn: number;
}

/** The turn a stream entry's payload announces, or null for any other payload. */
export function laneTurnOf(payload: string): LaneTurn | null {
  if (!payload.startsWith('{"lane":')) return null;
  const parsed = JSON.parse(payload) as { lane?: unknown; turn?: unknown };
  return typeof parsed.lane === "string" && typeof parsed.turn === "number"
    ? { lane: parsed.lane, turn: parsed.turn }
    : null;
}

/**
 * Lanes: a stream fed fairly by many producers (the run queue's lanes are accounts). An entry
 * appended to a lane with no turn on the stream goes straight onto the stream, the lane's
 * first turn right behind it; while the lane has a turn out, entries wait in the lane. A
 * reader that reads a turn calls `admitLane`, which moves up to `count` of the lane's oldest
 * entries onto the stream in one step and, while the lane has more, the lane's next turn after
 * them (with none left, the lane is done until its next entry). So no lane has more than
 * `count` entries and one turn on the stream at once, and an entry of one lane reaches the
 * readers after at most `count` entries of each other lane with work: a lane with a backlog of
 * millions does not hold the others back.
 * Each lane is first in, first out. Readers of a laned stream read, claim and acknowledge its
 * entries (turns too) as on any stream; `deleteStream` drops its lanes as well.
 */
export interface LanePort {
  /** Appends an entry to `lane` of `stream`: onto the stream with the lane's first turn when the lane has no turn out, else into the lane. */
  appendToLane(scope: Scope, stream: string, lane: string, payload: string): Promise<void>;
  /**
   * Moves up to `count` of the lane's oldest entries onto the stream, then its next turn when
   * entries are left. A stale turn (an earlier one, delivered again) moves nothing. Returns
   * how many entries were moved.
   */
  admitLane(scope: Scope, stream: string, turn: LaneTurn, count: number): Promise<number>;
  /** How many entries wait in the lane (not on the stream yet). */
  laneLength(scope: Scope, stream: string, lane: string): Promise<number>;
}

export interface KvEntry {
  key: string;
  value: string;
  /** Increases with every write to the bucket; never reused, so a CAS cannot be fooled by delete-and-recreate. */
  revision: number;
  /** When the value was last written. */
  modified: Date;
}

export interface KvPutOptions {
  /** The key expires this many seconds after the write (no expiry when omitted). */
  ttlSeconds?: number;
  /** The most bytes the scope's KV keys and values may come to with this write (see `StreamQuota`). */
  maxBytes?: number;
}

/** The live value a write replaced or a delete removed. */
export interface KvPrevious {
  /** It had been written with a TTL. */
  expiring: boolean;
}

export type CompareAndSetResult =
  /** `previous` is the live value written over (null when the key was absent or expired). */
  | { ok: true; revision: number; previous: KvPrevious | null }
  /** `revision` is the key's current revision, 0 when it does not exist. */
  | { ok: false; revision: number };

export interface KvListOptions {
  /** Keys after this one (exclusive), from a previous page's `next`. */
  cursor?: string;
  /** Only keys that start with this. */
  prefix?: string;
  /** At most this many keys (default 100). */
  limit?: number;
}

export interface KvPort {
  /** Writes a value; returns its new revision and the live value it replaced (null when none). */
  kvPut(
    scope: Scope,
    bucket: string,
    key: string,
    value: string,
    options?: KvPutOptions,
  ): Promise<{ revision: number; previous: KvPrevious | null }>;
  /** The live value of a key, or null when missing or expired. */
  kvGet(scope: Scope, bucket: string, key: string): Promise<KvEntry | null>;
  /** Deletes a key; returns the live value removed, or null when the key was missing or had expired. */
  kvDelete(scope: Scope, bucket: string, key: string): Promise<KvPrevious | null>;
  /** Live keys in byte order, paged; `next` is the cursor for the following page, null on the last. */
  kvKeys(scope: Scope, bucket: string, options?: KvListOptions): Promise<{ keys: string[]; next: string | null }>;
  /**
   * Writes only when the key's current revision equals `expectedRevision`
   * (0: only when the key does not exist or has expired).
   */
  kvCompareAndSet(
    scope: Scope,
    bucket: string,
    key: string,
    value: string,
    expectedRevision: number,
    options?: KvPutOptions,
  ): Promise<CompareAndSetResult>;
  /** Deletes every key of a bucket; returns how many live keys there were, and how many of them had a TTL. */
  kvDeleteBucket(scope: Scope, bucket: string): Promise<{ keys: number; expiring: number }>;
}

export interface RateLimitDecision {
  allowed: boolean;
  /** 0 when allowed; otherwise whole seconds (at least 1) until a slot frees up. */
  retryAfterSeconds: number;
  /**
   * When present, the allowed call's slot is being written still: it is durable (a restart
   * remembers it) once this settles. A caller that answers late anyway (a gateway, after its
   * run) awaits it before answering; decided calls are exact either way.
   */
  recorded?: Promise<void>;
}

/** What a windowed count granted. */
export interface WindowGrant {
  /** How many of the calls asked for were granted (the first ones). */
  granted: number;
  /** The count in the sliding window, this grant included. */
  used: number;
  /** 0 when everything asked for was granted; otherwise whole seconds (at least 1) until another call may be. */
  retryAfterSeconds: number;
}

export interface CounterPort {
  /** Adds `by` (default 1) to a named counter and returns the new total. */
  increment(scope: Scope, name: string, by?: number): Promise<number>;
  /** A counter's total (0 when never incremented). */
  counter(scope: Scope, name: string): Promise<number>;
  /**
   * Sliding-window limiter: allows at most `limit` calls for `key` in any
   * `windowSeconds` window. Exact under concurrency; a denied call does not use a slot.
   */
  allow(scope: Scope, key: string, limit: number, windowSeconds: number): Promise<RateLimitDecision>;
  /**
   * A sliding window approximated from two fixed ones (the previous window's count weighted
   * by how much of it still overlaps, plus the current one's): grants up to `count` calls
   * for `key`, so that the window's count stays within `limit`, in one step. Cheap for
   * limits of thousands per second, where `allow` keeps a record per call. `count` 0 reads
   * the count without taking.
   */
  take(scope: Scope, key: string, limit: number, windowSeconds: number, count: number): Promise<WindowGrant>;
  /** What the scope keeps, counted as it is written and removed (trims, expiries and deletes included). */
  usage(scope: Scope): Promise<StorageUsage>;
}

export type Unsubscribe = () => Promise<void>;

export interface NotificationPort {
  /**
   * Sends `message` to every current subscriber of `channel` in `scope`, in any process.
   * Fire-and-forget: nobody listening means nobody hears it. Messages up to 7,000 bytes
   * (a PostgreSQL NOTIFY limit); send an id and let the receiver read the rest.
   */
  publish(scope: Scope, channel: string, message: string): Promise<void>;
  /** Resolves once the subscription is active, so a `publish` after it is heard. */
  subscribe(scope: Scope, channel: string, onMessage: (message: string) => void): Promise<Unsubscribe>;
}

export interface Broker extends StreamPort, LanePort, KvPort, CounterPort, NotificationPort {
  readonly kind: BrokerKind;
  /** Resolves when the backend answers; rejects with `unavailable` otherwise (used by /readyz). */
  ping(): Promise<void>;
  /**
   * Names who holds a scope's data now. It changes whenever what the scope held may be
   * gone: its Redis started again empty, or a replica that can lack the newest writes
   * (replication is asynchronous) was promoted in place of its primary. Redis: the
   * replication id of the primary serving the scope's slot. PostgreSQL: the data is the
   * database's, never lost apart from it, so always `"postgres"`.
   */
  dataHolder(scope: Scope): Promise<string>;
  /** Releases connections and timers. The broker is unusable afterwards. */
  close(): Promise<void>;
}

/** The largest notification message every adapter accepts. */
export const MAX_NOTIFICATION_BYTES = 7000;
