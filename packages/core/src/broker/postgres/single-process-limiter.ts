import { type CompiledQuery, type Kysely, sql } from "kysely";
import { groupCommit, ONE_STATEMENT_AT_A_TIME } from "../../group-commit.ts";
import { retryAfterSeconds } from "../arguments.ts";
import type { RateLimitDecision } from "../port.ts";

/** Keys kept in memory at most; past it, those whose window has emptied are let go. */
const MAX_KEYS = 100_000;

/**
 * A key's rows past which a write may fold them into one: it does once the turns since the
 * last fold wrote as many hits as the fold would (so folding costs at most what the turns
 * did), or once the key has MOST_ROWS rows, whatever they hold.
 */
const FOLD_AFTER = 64;
/** A key's rows past which its next write folds them, however little its turns wrote (see FOLD_AFTER). */
export const MOST_ROWS = 1024;

/** Expired hits kept at the head of a key's list before they are cut off (cutting is a copy of the rest). */
const MOST_EXPIRED_KEPT = 1024;

interface Window {
  scope: string;
  key: string;
  /** The times (epoch ms) of the calls allowed, oldest first; those before `first` have left the window. */
  hits: number[];
  first: number;
  windowMs: number;
  /** Hits allowed and not yet taken by a write (see `persist`). */
  unwritten: number[];
  /** The key's rows in `broker_rate_limit_turns` (and `broker_rate_limits`), as far as this process knows. */
  rows: number;
  /** Hits written in turn rows since the key's last fold (or since it was read). */
  unfolded: number;
}

// biome-ignore lint/suspicious/noExplicitAny: the broker's tables are not in the Database type
type AnyDatabase = Kysely<any>;
type Allow = (scope: string, key: string, limit: number, windowMs: number) => Promise<RateLimitDecision>;

const limiters = new WeakMap<AnyDatabase, Allow>();

/** How the limiter writes its statement: by default alone; the platform's, with the next statement (`commitWithNext`). */
export type LimiterWrite = (query: CompiledQuery) => Promise<unknown>;

/**
 * The sliding-window limiter (`allow`) for a database only this process opens (PGlite:
 * embedded mode is one process). Every call is decided in memory against the key's hits,
 * synchronously, so calls are decided one after another without a lock: exact, as the
 * locked row is for many processes. A key's hits are read from the database the first time
 * it is used, and an allowed call's hit is written back while the caller goes on
 * (`recorded`: the keys that changed in one turn of the event loop share one statement,
 * where the locked-row limiter pays a transaction per call). A write adds a row per key with
 * the hits of its turn (`broker_rate_limit_turns`), and now and then replaces the key's rows
 * with one holding its window (a fold, see FOLD_AFTER), so that a write costs what its turn
 * allowed, not the whole window, folds cost no more than the turns between them wrote (a
 * gateway near its largest limit folded ten thousand hits every 64 turns of 35: four times
 * what the turns wrote), and a key keeps at most MOST_ROWS + 1 rows. The platform's write
 * (`write`: PGlite's `commitWithNext`) puts that statement in the transaction of the next
 * one sent, a gateway's run insert, so that the two share a commit: a transaction of its own
 * was 8% of an embedded gateway request's CPU. A caller that awaits `recorded` before
 * answering (the gateway) has a restart remember every call it answered. Times are this
 * process's clock, which is PGlite's. One limiter per database: every broker opened on it
 * in this process (tests open several) decides in one place.
 */
export function singleProcessLimiter(db: AnyDatabase, write?: LimiterWrite): Allow {
  let limiter = limiters.get(db);
  if (!limiter) {
    limiter = createSingleProcessLimiter(db, write);
    limiters.set(db, limiter);
  }
  return limiter;
}

/** A limiter of its own (a process started again, in tests); the platform uses `singleProcessLimiter`. */
export function createSingleProcessLimiter(
  db: AnyDatabase,
  write: LimiterWrite = (query) => db.executeQuery(query),
): Allow {
  const windows = new Map<string, Window>();
  const loading = new Map<string, Promise<Window>>();
  const keyOf = (scope: string, key: string) => JSON.stringify([scope, key]);

  async function load(scope: string, key: string, windowMs: number): Promise<Window> {
    // `broker_rate_limits` holds the window a process before migration 20261203000000 wrote.
    const { rows } = await sql<{ hits: unknown[] }>`
      select hits from broker_rate_limit_turns where scope = ${scope} and key = ${key}
      union all
      select hits from broker_rate_limits where scope = ${scope} and key = ${key}`.execute(db);
    const hits = rows.flatMap((row) => row.hits.map(Number)).sort((a, b) => a - b);
    return { scope, key, hits, first: 0, windowMs, unwritten: [], rows: rows.length, unfolded: hits.length };
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

  // Each statement writes, per key its calls changed, the hits no write has taken yet (a fold: all of the key's window).
  const persist = groupCommit<Window, void>(
    async (items) => {
      const taken = [...new Set(items)].map((window) => ({ window, hits: window.unwritten.splice(0) }));
      // A key whose hits an earlier write of this turn took has nothing left: that write commits first.
      const rows = taken
        .filter(({ hits }) => hits.length > 0)
        .map(({ window, hits }) => {
          const live = window.hits.length - window.first;
          const fold = window.rows >= MOST_ROWS || (window.rows >= FOLD_AFTER && window.unfolded >= live);
          const kept = fold ? window.hits.slice(window.first) : hits;
          window.rows = fold ? 1 : window.rows + 1;
          window.unfolded = fold ? 0 : window.unfolded + hits.length;
          return {
            scope: window.scope,
            key: window.key,
            fold,
            hits: `{${kept.join(",")}}`,
            expires_at: new Date((kept.at(-1) as number) + window.windowMs).toISOString(),
          };
        });
      if (rows.length === 0) return items.map(() => undefined);
      const insert = sql`
        insert into broker_rate_limit_turns (scope, key, hits, expires_at)
        values ${sql.join(rows.map((row) => sql`(${row.scope}, ${row.key}, ${row.hits}::float8[], ${row.expires_at}::timestamptz)`))}`;
      const folds = rows.filter((row) => row.fold).map(({ scope, key }) => ({ scope, key }));
      try {
        // The deletes of a fold are planned only when a key folds; the common write is the INSERT alone.
        const statement =
          folds.length === 0
            ? insert
            : sql`
              with folds as (
                select * from jsonb_to_recordset(${JSON.stringify(folds)}::jsonb) as f(scope text, key text)
              ), folded as (
                delete from broker_rate_limit_turns t using folds f where t.scope = f.scope and t.key = f.key
              ), folded_before as (
                delete from broker_rate_limits r using folds f where r.scope = f.scope and r.key = f.key
              )
              ${insert}`;
        await write(statement.compile(db));
      } catch (error) {
        // Not written: the key's next write folds, writing its whole window, these hits among it.
        for (const { window } of taken) window.rows = MOST_ROWS;
        throw error;
      }
      return items.map(() => undefined);
    },
    { maxBatch: 1000, maxInFlight: ONE_STATEMENT_AT_A_TIME },
  );

  return async function allow(scope, key, limit, windowMs) {
    const window = await windowOf(scope, key, windowMs);
    // From here to the push, nothing awaits: no other call of the key decides in between.
    const now = Date.now();
    window.windowMs = windowMs;
    const { hits } = window;
    while (window.first < hits.length && (hits[window.first] as number) <= now - windowMs) window.first++;
    if (window.first > MOST_EXPIRED_KEPT && window.first * 2 > hits.length) {
      hits.splice(0, window.first);
      window.first = 0;
    }
    if (hits.length - window.first >= limit) {
      // A slot frees up once the window holds limit - 1 calls (see the locked-row limiter).
      const freeing = hits[hits.length - limit] as number;
      return { allowed: false, retryAfterSeconds: retryAfterSeconds(freeing + windowMs - now) };
    }
    hits.push(now);
    window.unwritten.push(now);
    // Written with the other keys changed in this turn, while the caller goes on (see `recorded`).
    const recorded = persist(window);
    recorded.catch(() => undefined);
    return { allowed: true, retryAfterSeconds: 0, recorded };
  };
}
