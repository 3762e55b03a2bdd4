import { randomUUID } from "node:crypto";
import { assertInteger, assertNames, assertTake, retryAfterSeconds } from "../arguments.ts";
import type { CounterPort } from "../port.ts";
import type { RedisClient } from "./client.ts";
import { guarded } from "./client.ts";
import { counterKey, rateLimitKey, usageKey, windowKey } from "./keys.ts";
import { RATE_LIMIT, runScript, TAKE } from "./scripts.ts";

/** Counters with INCRBY; the sliding-window limiter as one Lua script over a sorted set. */
export function redisCounters(client: RedisClient): CounterPort {
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
      const [allowed, waitMs] = (await guarded(() =>
        runScript(client, RATE_LIMIT, [rateLimitKey(scope, key)], [limit, windowMs, randomUUID()]),
      )) as [number, number];
      return Number(allowed) === 1
        ? { allowed: true, retryAfterSeconds: 0 }
        : { allowed: false, retryAfterSeconds: retryAfterSeconds(Number(waitMs)) };
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
