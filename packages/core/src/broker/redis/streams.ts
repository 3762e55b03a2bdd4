import type { Redis } from "ioredis";
import { isDomainError } from "../../errors.ts";
import {
  assertInteger,
  assertName,
  assertNames,
  assertNonNegative,
  groupReadOptions,
  MAX_IDLE_MS,
} from "../arguments.ts";
import type { DeliveredEntry, StreamEntry, StreamPort } from "../port.ts";
import type { BlockingClientPool } from "./blocking-pool.ts";
import { guarded, toBrokerError } from "./client.ts";
import { streamKey } from "./keys.ts";
import { CLAIM_IDLE, runScript, SET_IDLE, TRIM } from "./scripts.ts";

/** The one field an entry carries in Redis. */
const PAYLOAD_FIELD = "p";

type RawEntry = [id: string, fields: string[] | null];

function toEntry([id, fields]: RawEntry): StreamEntry {
  const at = fields ? fields.indexOf(PAYLOAD_FIELD) : -1;
  return {
    id,
    payload: at >= 0 && fields ? (fields[at + 1] ?? "") : "",
    timestamp: Number(id.slice(0, id.indexOf("-"))),
  };
}

const asId = (id: unknown) => id as string;
const rejectAsBrokerError = (error: unknown): Promise<never> => Promise.reject(toBrokerError(error));

function assertIds(ids: string[]): void {
  for (const id of ids) assertName("entry id", id);
}

/** Streams on Redis Streams: XADD, XREADGROUP, XACK, XAUTOCLAIM, XTRIM. */
export function redisStreams(client: Redis, blocking: BlockingClientPool): StreamPort {
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
      const read = (connection: Redis) =>
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
        runScript(client, SET_IDLE, [streamKey(scope, stream)], [group, consumer, 0, 0, ...ids]),
      );
      return Number(held);
    },

    async release(scope, stream, group, consumer, ids, idleMs = MAX_IDLE_MS, options = {}) {
      assertNames({ scope, stream, group, consumer });
      assertIds(ids);
      assertNonNegative("idleMs", idleMs);
      if (ids.length === 0) return;
      const idle = Math.floor(Math.min(idleMs, MAX_IDLE_MS));
      const undo = options.undoDelivery ? 1 : 0;
      await guarded(() =>
        runScript(client, SET_IDLE, [streamKey(scope, stream)], [group, consumer, idle, undo, ...ids]),
      );
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

    async length(scope, stream) {
      assertNames({ scope, stream });
      return guarded(() => client.xlen(streamKey(scope, stream)));
    },

    async trim(scope, stream, options) {
      assertNames({ scope, stream });
      if (options.maxLength !== undefined) assertInteger("maxLength", options.maxLength, 0);
      if (options.maxAgeMs !== undefined) assertInteger("maxAgeMs", options.maxAgeMs, 0);
      const removed = await guarded(() =>
        runScript(client, TRIM, [streamKey(scope, stream)], [options.maxLength ?? "", options.maxAgeMs ?? ""]),
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
      return (await guarded(() => client.del(streamKey(scope, stream)))) > 0;
    },
  };
}
