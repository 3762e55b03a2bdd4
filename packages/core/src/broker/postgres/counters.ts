import type { DatabaseHandle } from "@platform/db";
import { sql } from "kysely";
import { groupCommit, ONE_STATEMENT_AT_A_TIME } from "../../group-commit.ts";
import { assertInteger, assertNames, assertTake, retryAfterSeconds } from "../arguments.ts";
import type { CounterPort } from "../port.ts";
import { guarded } from "./failures.ts";
import type { QuotaGate } from "./quotas.ts";
import { singleProcessLimiter } from "./single-process-limiter.ts";

interface Increment {
  scope: string;
  name: string;
  by: number;
}

/**
 * The increments made together as one upsert, a row per counter (an upsert cannot change a
 * row twice). Each answers its counter's value as it left it: the new total less what the
 * increments after it in the batch added.
 */
async function addAll(db: DatabaseHandle["db"], increments: Increment[]): Promise<number[]> {
  const keyOf = (scope: string, name: string) => JSON.stringify([scope, name]);
  const sums = new Map<string, Increment>();
  for (const { scope, name, by } of increments) {
    const key = keyOf(scope, name);
    sums.set(key, { scope, name, by: (sums.get(key)?.by ?? 0) + by });
  }
  const { rows } = await sql<{ scope: string; name: string; value: number | string }>`
    insert into broker_counters as c (scope, name, value)
    values ${sql.join([...sums.values()].map(({ scope, name, by }) => sql`(${scope}, ${name}, ${by})`))}
    on conflict (scope, name) do update set value = c.value + excluded.value
    returning scope, name, value`.execute(db);
  const totals = new Map(rows.map((row) => [keyOf(row.scope, row.name), Number(row.value)]));
  const addedAfter = new Map<string, number>();
  const values: number[] = [];
  for (let i = increments.length - 1; i >= 0; i--) {
    const { scope, name, by } = increments[i] as Increment;
    const key = keyOf(scope, name);
    const after = addedAfter.get(key) ?? 0;
    values[i] = (totals.get(key) as number) - after;
    addedAfter.set(key, after + by);
  }
  return values;
}

/**
 * Counters as upserts, the increments of a turn of the event loop in one statement (the
 * metrics' flush sends one per account and counter: a statement each cost the embedded
 * deployment about 80 a second). The limiter keeps, per key, the times of the calls it
 * allowed in the current window; a caller locks that row (the upsert takes the lock even
 * when it creates the row), decides, and writes back in one short transaction, so
 * concurrent callers are decided one after another: exact. On PGlite, which one process
 * opens, the same rows are kept by a limiter that decides in memory and writes back in
 * batches.
 */
export function postgresCounters(handle: DatabaseHandle, quotas: QuotaGate): CounterPort {
  const db = handle.db;
  // PGlite is opened by one process only: its calls are decided in memory (see singleProcessLimiter).
  const allowHere = handle.kind === "pglite" ? singleProcessLimiter(db, handle.commitWithNext) : undefined;
  const add = groupCommit<Increment, number>((increments) => guarded(() => addAll(db, increments)), {
    maxBatch: 1000,
    maxInFlight: ONE_STATEMENT_AT_A_TIME,
  });
  return {
    async increment(scope, name, by = 1) {
      assertNames({ scope, name });
      assertInteger("by", by, Number.MIN_SAFE_INTEGER);
      return add({ scope, name, by });
    },

    async counter(scope, name) {
      assertNames({ scope, name });
      const result = await guarded(() =>
        sql<{ value: number }>`select value from broker_counters where scope = ${scope} and name = ${name}`.execute(db),
      );
      return Number(result.rows[0]?.value ?? 0);
    },

    async allow(scope, key, limit, windowSeconds) {
      assertNames({ scope, key });
      assertInteger("limit", limit, 1);
      const windowMs = Math.round(windowSeconds * 1000);
      assertInteger("windowSeconds in milliseconds", windowMs, 1);
      if (allowHere) return guarded(() => allowHere(scope, key, limit, windowMs));
      return guarded(() =>
        db.transaction().execute(async (trx) => {
          const locked = await sql<{ hits: number[]; now_ms: number }>`
            insert into broker_rate_limits as r (scope, key, hits, expires_at)
            values (${scope}, ${key}, '{}', clock_timestamp())
            on conflict (scope, key) do update set hits = r.hits
            returning hits, extract(epoch from clock_timestamp())::float8 * 1000 as now_ms`.execute(trx);
          const row = locked.rows[0];
          if (!row) throw new Error("rate limit row was not locked");
          const now = row.now_ms;
          const live = row.hits
            .map(Number)
            .filter((hit) => hit > now - windowMs)
            .sort((a, b) => a - b);
          if (live.length >= limit) {
            // A slot frees up once the window holds limit - 1 calls: when this call has left it
            // (the oldest, unless the limit was lowered while more calls were in the window).
            const freeing = live[live.length - limit] as number;
            return { allowed: false, retryAfterSeconds: retryAfterSeconds(freeing + windowMs - now) };
          }
          live.push(now);
          await sql`
            update broker_rate_limits
            set hits = ${`{${live.join(",")}}`}::float8[], expires_at = clock_timestamp() + ${windowMs}::float8 * interval '1 millisecond'
            where scope = ${scope} and key = ${key}`.execute(trx);
          return { allowed: true, retryAfterSeconds: 0 };
        }),
      );
    },

    async take(scope, key, limit, windowSeconds, count) {
      assertNames({ scope, key });
      const windowMs = assertTake(limit, windowSeconds, count);
      const result = await guarded(() =>
        sql<{ granted: string; used: string; wait_ms: string }>`
          select granted::text, used::text, wait_ms::text
          from broker_take(${scope}, ${key}, ${limit}, ${windowMs}, ${count})`.execute(db),
      );
      const row = result.rows[0];
      const granted = Number(row?.granted ?? 0);
      return {
        granted,
        used: Number(row?.used ?? 0),
        retryAfterSeconds: granted < count ? retryAfterSeconds(Number(row?.wait_ms ?? 1000)) : 0,
      };
    },

    async usage(scope) {
      assertNames({ scope });
      return guarded(() => quotas.usage(scope));
    },
  };
}
