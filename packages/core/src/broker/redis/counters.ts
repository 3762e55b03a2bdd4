import { randomUUID } from "node:crypto";
import { keyedGroupCommit } from "../../group-commit.ts";
import { assertInteger, assertNames, assertTake, retryAfterSeconds } from "../arguments.ts";
import type { CounterPort, RateLimitDecision } from "../port.ts";
import type { RedisClient } from "./client.ts";
import { guarded } from "./client.ts";
import { counterKey, rateLimitKey, usageKey, windowKey } from "./keys.ts";
import { RATE_LIMIT, runScript, TAKE } from "./scripts.ts";

/** A call of a limiter: its sorted set's key, its limit and window. */
interface Allow {
  redisKey: string;
  limit: number;
  windowMs: number;
}

/** Most calls of one limiter decided by one script call (its members are one ZADD's arguments). */
const MOST_DECIDED_TOGETHER = 1000;

const ALLOWED: RateLimitDecision = { allowed: true, retryAfterSeconds: 0 };

/**
 * Counters with INCRBY; the sliding-window limiter as one Lua script over a sorted set. A
 * limiter's calls of one turn of the event loop are decided by one script call, in the
 * order they came (a gateway under load made one call a request: 17 µs of Redis's CPU each,
 * and as many commands for the API to send and read); the script is atomic, so the limit
 * stays exact across every process.
 */
export function redisCounters(client: RedisClient): CounterPort {
  const decide = keyedGroupCommit<Allow, RateLimitDecision>(
    ({ redisKey, limit, windowMs }) => `${redisKey}\u0000${limit}\u0000${windowMs}`,
    async (calls) => {
      const { redisKey, limit, windowMs } = calls[0] as Allow;
      const [allowed, waitMs] = (await guarded(() =>
        runScript(client, RATE_LIMIT, [redisKey], [limit, windowMs, calls.length, randomUUID()]),
      )) as [number, number];
      const refused = { allowed: false, retryAfterSeconds: retryAfterSeconds(Number(waitMs)) };
      return calls.map((_, index) => (index < Number(allowed) ? ALLOWED : refused));
    },
    // A script call goes for each turn's calls, whatever is in flight: the script is atomic.
    { maxBatch: MOST_DECIDED_TOGETHER, maxInFlight: Number.POSITIVE_INFINITY, isItemFault: () => false },
  );

  return {
    async increment(scope, name, by = 1) {
      assertNames({ scope, name });
      assertInteger("by", by, Number.MIN_SAFE_INTEGER);
      return guarded(() => client.incrby(counterKey(scope, name), by));
    },

    async counter(scope, name) {
      assertNames({ scope, name });
      const value = await guarded(() => client.get(counterKey(scope, name)));
      return value === null ? 0 : Number(value);
    },

    async allow(scope, key, limit, windowSeconds) {
      assertNames({ scope, key });
      assertInteger("limit", limit, 1);
      const windowMs = Math.round(windowSeconds * 1000);
      assertInteger("windowSeconds in milliseconds", windowMs, 1);
      return decide({ redisKey: rateLimitKey(scope, key), limit, windowMs });
    },

    async take(scope, key, limit, windowSeconds, count) {
      assertNames({ scope, key });
      const windowMs = assertTake(limit, windowSeconds, count);
      const [granted, used, waitMs] = (await guarded(() =>
        runScript(client, TAKE, [windowKey(scope, key)], [limit, windowMs, count]),
      )) as [number, number, number];
      return {
        granted: Number(granted),
        used: Number(used),
        retryAfterSeconds: Number(granted) < count ? retryAfterSeconds(Number(waitMs)) : 0,
      };
    },

    async usage(scope) {
      assertNames({ scope });
      const [kv, streams] = await guarded(() => client.hmget(usageKey(scope), "kv", "streams"));
      return { kvBytes: Number(kv ?? 0), streamBytes: Number(streams ?? 0) };
    },
  };
}
