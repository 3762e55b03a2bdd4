import { isDomainError } from "../../errors.ts";
import { keyedGroupCommit } from "../../group-commit.ts";
import {
  assertInteger,
  assertName,
  assertNames,
  assertNonNegative,
  assertQuota,
  assertTrimOptions,
  groupReadOptions,
  MAX_IDLE_MS,
} from "../arguments.ts";
import {
  type DeliveredEntry,
  type LanePort,
  type NumberedEntry,
  QuotaExceeded,
  type StreamEntry,
  type StreamPort,
} from "../port.ts";
import type { BlockingClientPool } from "./blocking-pool.ts";
import type { RedisClient } from "./client.ts";
import { guarded, toBrokerError } from "./client.ts";
import { laneKeys, streamKey, usageKey } from "./keys.ts";
import {
  ADMIT_LANE,
  APPEND_NUMBERED,
  APPEND_TO_LANE,
  CLAIM_IDLE,
  DELETE_STREAM,
  GROUP_CONSUMERS,
  LANE_APPEND_MAX,
  REMOVE_IDLE_CONSUMERS,
  runScript,
  SET_IDLE,
  TRIM,
  TRIM_ACKNOWLEDGED,
} from "./scripts.ts";

/** The field holding an entry's payload. */
const PAYLOAD_FIELD = "p";
/** The field holding the append time (epoch ms) of a numbered stream's entry, whose id carries none. */
const TIME_FIELD = "t";

type RawEntry = [id: string, fields: string[] | null];

function fieldOf(fields: string[] | null, name: string): string | undefined {
  if (!fields) return undefined;
  for (let i = 0; i < fields.length; i += 2) if (fields[i] === name) return fields[i + 1];
  return undefined;
}

function toEntry([id, fields]: RawEntry): StreamEntry {
  const time = fieldOf(fields, TIME_FIELD);
  return {
    id,
    payload: fieldOf(fields, PAYLOAD_FIELD) ?? "",
    timestamp: time === undefined ? Number(id.slice(0, id.indexOf("-"))) : Number(time),
  };
}

/** A numbered stream's ids are `0-<seq>` (see APPEND_NUMBERED). */
const seqOf = (id: string) => Number(id.slice(id.indexOf("-") + 1));

function toNumberedEntry(raw: RawEntry): NumberedEntry {
  const { id, payload, timestamp } = toEntry(raw);
  return { seq: seqOf(id), payload, timestamp };
}

const asId = (id: unknown) => id as string;
const rejectAsBrokerError = (error: unknown): Promise<never> => Promise.reject(toBrokerError(error));

function assertIds(ids: string[]): void {
  for (const id of ids) assertName("entry id", id);
}

interface LaneAppend {
  scope: string;
  stream: string;
  lane: string;
  payload: string;
}

/**
 * The appends to each lane made in one turn of the event loop (a run INSERT's runs, queued
 * together once it commits), sent as one APPEND_TO_LANE call per lane (`keyedGroupCommit`):
 * the script's cost is Redis's, per call, and the command's the caller's, so a batch of runs
 * costs about what one did. A turn's calls go whatever is in flight: one connection keeps
 * them in order.
 */
function laneAppendBatches(client: RedisClient): (append: LaneAppend) => Promise<void> {
  return keyedGroupCommit<LaneAppend, void>(
    ({ scope, stream, lane }) => `${scope}\u0000${stream}\u0000${lane}`,
    async (appends) => {
      const { scope, stream, lane } = appends[0] as LaneAppend;
      const lanes = laneKeys(scope, stream);
      const keys = [lanes.entries(lane), lanes.turns, streamKey(scope, stream)];
      await guarded(() => runScript(client, APPEND_TO_LANE, keys, [lane, ...appends.map((append) => append.payload)]));
      return appends.map(() => undefined);
    },
    { maxBatch: LANE_APPEND_MAX, maxInFlight: Number.POSITIVE_INFINITY, isItemFault: () => false },
  );
}

/** Streams on Redis Streams: XADD, XREADGROUP, XACK, XAUTOCLAIM, XTRIM. */
export function redisStreams(client: RedisClient, blocking: BlockingClientPool): StreamPort & LanePort {
  const appendToLane = laneAppendBatches(client);
  return {
    // The hot path, kept free of per-call closures and async frames (it runs at 100k+/s).
    append(scope, stream, payload) {
      try {
        assertName("scope", scope);
        assertName("stream", stream);
      } catch (error) {
        return Promise.reject(error);
      }
      return client.xadd(streamKey(scope, stream), "*", PAYLOAD_FIELD, payload).then(asId, rejectAsBrokerError);
    },

    async ensureGroup(scope, stream, group, options = {}) {
      assertNames({ scope, stream, group });
      const start = options.startAt === "end" ? "$" : "0";
      await guarded(async () => {
        try {
          await client.xgroup("CREATE", streamKey(scope, stream), group, start, "MKSTREAM");
        } catch (error) {
          if (!(error instanceof Error && error.message.startsWith("BUSYGROUP"))) throw error;
        }
      });
    },

    async readGroup(scope, stream, group, consumer, options = {}) {
      assertNames({ scope, stream, group, consumer });
      const { count, blockMs } = groupReadOptions(options);
      const key = streamKey(scope, stream);
      const read = (connection: RedisClient) =>
        blockMs > 0
          ? connection.xreadgroup("GROUP", group, consumer, "COUNT", count, "BLOCK", blockMs, "STREAMS", key, ">")
          : connection.xreadgroup("GROUP", group, consumer, "COUNT", count, "STREAMS", key, ">");
      const reply = (await guarded(() => (blockMs > 0 ? blocking.use(read) : read(client)))) as
        | [string, RawEntry[]][]
        | null;
      const entries = reply?.[0]?.[1] ?? [];
      return entries.map((raw): DeliveredEntry => ({ ...toEntry(raw), deliveries: 1 }));
    },

    async ack(scope, stream, group, ids) {
      assertNames({ scope, stream, group });
      assertIds(ids);
      if (ids.length === 0) return 0;
      return guarded(() => client.xack(streamKey(scope, stream), group, ...ids));
    },

    async claimIdle(scope, stream, group, consumer, minIdleMs, count) {
      assertNames({ scope, stream, group, consumer });
      assertInteger("minIdleMs", minIdleMs, 0);
      assertInteger("count", count, 1, 10_000);
      const reply = (await guarded(() =>
        runScript(client, CLAIM_IDLE, [streamKey(scope, stream)], [group, consumer, minIdleMs, count]),
      )) as [string, string[], number][];
      return reply.map(([id, fields, deliveries]) => ({ ...toEntry([id, fields]), deliveries: Number(deliveries) }));
    },

    async touch(scope, stream, group, consumer, ids) {
      assertNames({ scope, stream, group, consumer });
      assertIds(ids);
      if (ids.length === 0) return 0;
      const held = await guarded(() =>
        runScript(client, SET_IDLE, [streamKey(scope, stream)], [group, consumer, 0, ...ids]),
      );
      return Number(held);
    },

    async release(scope, stream, group, consumer, ids, idleMs = MAX_IDLE_MS) {
      assertNames({ scope, stream, group, consumer });
      assertIds(ids);
      assertNonNegative("idleMs", idleMs);
      if (ids.length === 0) return;
      const idle = Math.floor(Math.min(idleMs, MAX_IDLE_MS));
      await guarded(() => runScript(client, SET_IDLE, [streamKey(scope, stream)], [group, consumer, idle, ...ids]));
    },

    async pendingCount(scope, stream, group) {
      assertNames({ scope, stream, group });
      try {
        const summary = (await guarded(() => client.xpending(streamKey(scope, stream), group))) as [
          number,
          ...unknown[],
        ];
        return Number(summary[0]);
      } catch (error) {
        if (isDomainError(error) && error.code === "not_found") return 0;
        throw error;
      }
    },

    async consumers(scope, stream, group) {
      assertNames({ scope, stream, group });
      const reply = (await guarded(() => runScript(client, GROUP_CONSUMERS, [streamKey(scope, stream)], [group]))) as [
        string,
        number,
        number,
      ][];
      return reply
        .map(([name, pending, idleMs]) => ({ name, pending: Number(pending), idleMs: Number(idleMs) }))
        .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    },

    async removeIdleConsumers(scope, stream, group, minIdleMs) {
      assertNames({ scope, stream, group });
      assertNonNegative("minIdleMs", minIdleMs);
      const idle = Math.floor(Math.min(minIdleMs, MAX_IDLE_MS));
      const removed = await guarded(() =>
        runScript(client, REMOVE_IDLE_CONSUMERS, [streamKey(scope, stream)], [group, idle]),
      );
      return (removed as string[]).sort();
    },

    async length(scope, stream) {
      assertNames({ scope, stream });
      return guarded(() => client.xlen(streamKey(scope, stream)));
    },

    async trimAcknowledged(scope, stream) {
      assertNames({ scope, stream });
      return Number(await guarded(() => runScript(client, TRIM_ACKNOWLEDGED, [streamKey(scope, stream)], [])));
    },

    async trim(scope, stream, options) {
      assertNames({ scope, stream });
      assertTrimOptions(options);
      const removed = await guarded(() =>
        runScript(
          client,
          TRIM,
          [streamKey(scope, stream), usageKey(scope)],
          [options.maxLength ?? "", options.maxAgeMs ?? ""],
        ),
      );
      return Number(removed);
    },

    async readRange(scope, stream, options = {}) {
      assertNames({ scope, stream });
      const limit = options.limit ?? 100;
      assertInteger("limit", limit, 1, 10_000);
      if (options.after !== undefined) assertName("after", options.after);
      const start = options.after === undefined ? "-" : `(${options.after}`;
      const entries = (await guarded(() =>
        client.xrange(streamKey(scope, stream), start, "+", "COUNT", limit),
      )) as RawEntry[];
      return entries.map(toEntry);
    },

    async deleteStream(scope, stream) {
      assertNames({ scope, stream });
      const lanes = laneKeys(scope, stream);
      const deleted = await guarded(async () => {
        const waiting = await client.hkeys(lanes.turns);
        if (waiting.length > 0) await client.del(lanes.turns, ...waiting.map(lanes.entries));
        return runScript(client, DELETE_STREAM, [streamKey(scope, stream), usageKey(scope)], []);
      });
      return Number(deleted) > 0;
    },

    appendToLane(scope, stream, lane, payload) {
      try {
        assertNames({ scope, stream, lane });
      } catch (error) {
        return Promise.reject(error);
      }
      return appendToLane({ scope, stream, lane, payload });
    },

    async admitLane(scope, stream, { lane, turn }, count) {
      assertNames({ scope, stream, lane });
      assertInteger("turn", turn, 1);
      assertInteger("count", count, 1, 10_000);
      const lanes = laneKeys(scope, stream);
      const moved = await guarded(() =>
        runScript(
          client,
          ADMIT_LANE,
          [lanes.entries(lane), lanes.turns, streamKey(scope, stream)],
          [lane, turn, count],
        ),
      );
      return Number(moved);
    },

    async laneLength(scope, stream, lane) {
      assertNames({ scope, stream, lane });
      return guarded(() => client.llen(laneKeys(scope, stream).entries(lane)));
    },

    async appendNumbered(scope, stream, payload, options = {}, quota = {}) {
      assertNames({ scope, stream });
      assertTrimOptions(options);
      assertQuota(quota);
      const reply = (await guarded(() =>
        runScript(
          client,
          APPEND_NUMBERED,
          [streamKey(scope, stream), usageKey(scope)],
          [payload, options.maxLength ?? "", options.maxAgeMs ?? "", quota.maxEntries ?? "", quota.maxBytes ?? ""],
        ),
      )) as [number, string, number?];
      if (Number(reply[0]) === 1) return seqOf(String(reply[1]));
      const exceeded = reply[1] === "entries" ? "entries" : "bytes";
      const limit = (exceeded === "entries" ? quota.maxEntries : quota.maxBytes) ?? 0;
      throw new QuotaExceeded(exceeded, Number(reply[2]), limit);
    },

    async readNumbered(scope, stream, options = {}) {
      assertNames({ scope, stream });
      const afterSeq = options.afterSeq ?? 0;
      const limit = options.limit ?? 100;
      assertInteger("afterSeq", afterSeq, 0);
      assertInteger("limit", limit, 1, 10_000);
      const entries = (await guarded(() =>
        client.xrange(streamKey(scope, stream), `0-${afterSeq + 1}`, "+", "COUNT", limit),
      )) as RawEntry[];
      return entries.map(toNumberedEntry);
    },
  };
}
