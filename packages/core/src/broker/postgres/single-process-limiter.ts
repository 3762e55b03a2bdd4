import { type Kysely, sql } from "kysely";
import { groupCommit, ONE_STATEMENT_AT_A_TIME } from "../../group-commit.ts";
import { retryAfterSeconds } from "../arguments.ts";
import type { RateLimitDecision } from "../port.ts";

/** Keys kept in memory at most; past it, those whose window has emptied are let go. */
const MAX_KEYS = 100_000;

interface Window {
  /** The times (epoch ms) of the calls allowed, oldest first. */
  hits: number[];
  windowMs: number;
}

// biome-ignore lint/suspicious/noExplicitAny: the broker's tables are not in the Database type
type AnyDatabase = Kysely<any>;
type Allow = (scope: string, key: string, limit: number, windowMs: number) => Promise<RateLimitDecision>;

const limiters = new WeakMap<AnyDatabase, Allow>();

/**
 * The sliding-window limiter (`allow`) for a database only this process opens (PGlite:
 * embedded mode is one process). Every call is decided in memory against the key's hits,
 * synchronously, so calls are decided one after another without a lock: exact, as the
 * locked row is for many processes. A key's hits are read from `broker_rate_limits` the
 * first time it is used, and an allowed call's hit is written back there while the caller
 * goes on (`recorded`: the keys that changed in one turn of the event loop share one
 * statement, where the locked-row limiter pays a transaction per call); a caller that
 * awaits `recorded` before answering (the gateway) has a restart remember every call it
 * answered. Times are this process's clock, which is PGlite's. One limiter per database:
 * every broker opened on it in this process (tests open several) decides in one place.
 */
export function singleProcessLimiter(db: AnyDatabase): Allow {
  let limiter = limiters.get(db);
  if (!limiter) {
    limiter = createSingleProcessLimiter(db);
    limiters.set(db, limiter);
  }
  return limiter;
}

/** A limiter of its own (a process started again, in tests); the platform uses `singleProcessLimiter`. */
export function createSingleProcessLimiter(db: AnyDatabase): Allow {
  const windows = new Map<string, Window>();
  const loading = new Map<string, Promise<Window>>();
  const keyOf = (scope: string, key: string) => JSON.stringify([scope, key]);

  async function load(scope: string, key: string, windowMs: number): Promise<Window> {
    const { rows } = await sql<{ hits: unknown[] }>`
      select hits from broker_rate_limits where scope = ${scope} and key = ${key}`.execute(db);
    const hits = (rows[0]?.hits ?? []).map(Number).sort((a, b) => a - b);
    return { hits, windowMs };
  }

  async function windowOf(scope: string, key: string, windowMs: number): Promise<Window> {
    const id = keyOf(scope, key);
    const kept = windows.get(id);
    if (kept) return kept;
    let pending = loading.get(id);
    if (!pending) {
      pending = load(scope, key, windowMs).finally(() => loading.delete(id));
      loading.set(id, pending);
    }
    const loaded = await pending;
    // The first caller back keeps what was read; later ones find it kept.
    const window = windows.get(id) ?? loaded;
    windows.set(id, window);
    if (windows.size > MAX_KEYS) forgetEmptied(Date.now());
    return window;
  }

  function forgetEmptied(now: number): void {
    for (const [id, window] of windows) {
      if ((window.hits.at(-1) ?? 0) <= now - window.windowMs) windows.delete(id);
    }
  }

  // Each statement writes the current hits of the keys its calls changed (a key once).
  const persist = groupCommit<{ scope: string; key: string; window: Window }, void>(
    async (items) => {
      const latest = new Map(items.map((item) => [keyOf(item.scope, item.key), item]));
      const rows = [...latest.values()].map(({ scope, key, window }) => ({
        scope,
        key,
        hits: `{${window.hits.join(",")}}`,
        expires_at: new Date((window.hits.at(-1) ?? Date.now()) + window.windowMs).toISOString(),
      }));
      await sql`
        insert into broker_rate_limits (scope, key, hits, expires_at)
        select v.scope, v.key, v.hits::float8[], v.expires_at
        from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as v(scope text, key text, hits text, expires_at timestamptz)
        on conflict (scope, key) do update set hits = excluded.hits, expires_at = excluded.expires_at`.execute(db);
      return items.map(() => undefined);
    },
    { maxBatch: 1000, maxInFlight: ONE_STATEMENT_AT_A_TIME },
  );

  return async function allow(scope, key, limit, windowMs) {
    const window = await windowOf(scope, key, windowMs);
    // From here to the push, nothing awaits: no other call of the key decides in between.
    const now = Date.now();
    window.windowMs = windowMs;
    let expired = 0;
    while (expired < window.hits.length && (window.hits[expired] as number) <= now - windowMs) expired++;
    if (expired > 0) window.hits.splice(0, expired);
    if (window.hits.length >= limit) {
      // A slot frees up once the window holds limit - 1 calls (see the locked-row limiter).
      const freeing = window.hits[window.hits.length - limit] as number;
      return { allowed: false, retryAfterSeconds: retryAfterSeconds(freeing + windowMs - now) };
    }
    window.hits.push(now);
    // Written with the other keys changed in this turn, while the caller goes on (see `recorded`).
    const recorded = persist({ scope, key, window });
    recorded.catch(() => undefined);
    return { allowed: true, retryAfterSeconds: 0, recorded };
  };
}
