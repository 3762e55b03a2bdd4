import type { DatabaseHandle } from "@platform/db";
import { type RawBuilder, sql } from "kysely";
import { assertInteger, assertName, assertNames, assertNonNegative } from "../arguments.ts";
import type { CompareAndSetResult, KvPort, KvPrevious, KvPutOptions } from "../port.ts";
import { guarded } from "./failures.ts";
import type { QuotaGate } from "./quotas.ts";

/** Milliseconds until expiry, 0 for none. */
function ttlMs(options: KvPutOptions | undefined): number {
  if (options?.ttlSeconds === undefined) return 0;
  assertNonNegative("ttlSeconds", options.ttlSeconds);
  return options.ttlSeconds === 0 ? 0 : Math.max(1, Math.round(options.ttlSeconds * 1000));
}

const expiresAt = (ms: number) =>
  sql`case when ${ms}::float8 > 0 then clock_timestamp() + ${ms}::float8 * interval '1 millisecond' end`;

const isLive = sql`(expires_at is null or expires_at > clock_timestamp())`;

/**
 * The least string above every string that starts with `prefix`, in byte order (which is
 * code point order for UTF-8), or null when no string is: the end of a prefix's key range.
 */
function prefixEnd(prefix: string): string | null {
  const points = [...prefix];
  while (points.length > 0) {
    const last = points.pop()?.codePointAt(0) ?? 0;
    if (last < 0x10ffff) {
      const next = last + 1 === 0xd800 ? 0xe000 : last + 1;
      return points.join("") + String.fromCodePoint(next);
    }
  }
  return null;
}

/** The live value a statement found, from its `live` and `expiring` columns. */
const previousOf = (row: { live: boolean; expiring: boolean } | undefined): KvPrevious | null =>
  row?.live ? { expiring: row.expiring } : null;

/** How often a put retries when the key it found is deleted before it can overwrite it. */
const MAX_PUT_ATTEMPTS = 10;

/**
 * KV in one table. Revisions come from one sequence, so they grow with every write and
 * are never reused. Expired rows are invisible at once (every read filters them) and
 * removed by the adapter's periodic sweep.
 *
 * Writes report the live value they replaced. An overwrite reads it from a sub-select
 * that locks the row (`for update`, which in READ COMMITTED sees the latest committed
 * version), so a concurrent writer cannot slip in between what is reported and what is
 * overwritten.
 */
export function postgresKv(handle: DatabaseHandle, quotas: QuotaGate): KvPort {
  const db = handle.db;

  async function currentRevision(scope: string, bucket: string, key: string): Promise<number> {
    const result = await sql<{ revision: number }>`
      select revision from broker_kv where scope = ${scope} and bucket = ${bucket} and key = ${key} and ${isLive}`.execute(
      db,
    );
    return result.rows[0]?.revision ?? 0;
  }

  /** Overwrites an existing row (when `condition` holds), returning its new revision and what it replaced. */
  function overwrite(
    scope: string,
    bucket: string,
    key: string,
    value: string,
    ms: number,
    condition: RawBuilder<unknown>,
  ) {
    return sql<{ revision: number; live: boolean; expiring: boolean }>`
      update broker_kv kv
      set value = ${value}, revision = nextval('broker_kv_revision'), modified_at = clock_timestamp(), expires_at = ${expiresAt(ms)}
      from (
        select expires_at from broker_kv where scope = ${scope} and bucket = ${bucket} and key = ${key} for update
      ) old
      where kv.scope = ${scope} and kv.bucket = ${bucket} and kv.key = ${key} and ${condition}
      returning kv.revision, (old.expires_at is null or old.expires_at > clock_timestamp()) as live,
        old.expires_at is not null as expiring`.execute(db);
  }

  /** Writes only when the key is at `expectedRevision` (0: absent or expired). */
  async function compareAndSet(
    scope: string,
    bucket: string,
    key: string,
    value: string,
    expectedRevision: number,
    ms: number,
  ): Promise<CompareAndSetResult> {
    if (expectedRevision === 0) {
      const created = await sql<{ revision: number }>`
        insert into broker_kv as kv (scope, bucket, key, value, revision, modified_at, expires_at)
        values (${scope}, ${bucket}, ${key}, ${value}, nextval('broker_kv_revision'), clock_timestamp(), ${expiresAt(ms)})
        on conflict (scope, bucket, key) do update
        set value = excluded.value, revision = excluded.revision, modified_at = excluded.modified_at, expires_at = excluded.expires_at
        where kv.expires_at is not null and kv.expires_at <= clock_timestamp()
        returning revision`.execute(db);
      const row = created.rows[0];
      if (row) return { ok: true, revision: Number(row.revision), previous: null };
    } else {
      const condition = sql`kv.revision = ${expectedRevision} and (kv.expires_at is null or kv.expires_at > clock_timestamp())`;
      const row = (await overwrite(scope, bucket, key, value, ms, condition)).rows[0];
      if (row) return { ok: true, revision: Number(row.revision), previous: previousOf(row) };
    }
    return { ok: false, revision: await currentRevision(scope, bucket, key) };
  }

  return {
    async kvPut(scope, bucket, key, value, options) {
      assertNames({ scope, bucket, key });
      const ms = ttlMs(options);
      if (options?.maxBytes !== undefined) assertInteger("maxBytes", options.maxBytes, 0);
      return guarded(() =>
        quotas.kv(scope, bucket, key, value, options?.maxBytes, async () => {
          for (let attempt = 1; ; attempt++) {
            const inserted = await sql<{ revision: number }>`
            insert into broker_kv (scope, bucket, key, value, revision, modified_at, expires_at)
            values (${scope}, ${bucket}, ${key}, ${value}, nextval('broker_kv_revision'), clock_timestamp(), ${expiresAt(ms)})
            on conflict (scope, bucket, key) do nothing
            returning revision`.execute(db);
            const created = inserted.rows[0];
            if (created) return { revision: Number(created.revision), previous: null };
            const updated = (await overwrite(scope, bucket, key, value, ms, sql`true`)).rows[0];
            if (updated) return { revision: Number(updated.revision), previous: previousOf(updated) };
            // The row was deleted between the two statements: the insert can go ahead now.
            if (attempt >= MAX_PUT_ATTEMPTS) throw new Error("a KV put lost every race with deletes of its key");
          }
        }),
      );
    },

    async kvGet(scope, bucket, key) {
      assertNames({ scope, bucket, key });
      const result = await guarded(() =>
        sql<{ value: string; revision: number; modified_ms: number }>`
          select value, revision, extract(epoch from modified_at)::float8 * 1000 as modified_ms from broker_kv
          where scope = ${scope} and bucket = ${bucket} and key = ${key} and ${isLive}`.execute(db),
      );
      const row = result.rows[0];
      if (!row) return null;
      return { key, value: row.value, revision: Number(row.revision), modified: new Date(Math.floor(row.modified_ms)) };
    },

    async kvDelete(scope, bucket, key) {
      assertNames({ scope, bucket, key });
      const result = await guarded(() =>
        sql<{ live: boolean; expiring: boolean }>`
          delete from broker_kv where scope = ${scope} and bucket = ${bucket} and key = ${key}
          returning ${isLive} as live, expires_at is not null as expiring`.execute(db),
      );
      return previousOf(result.rows[0]);
    },

    async kvKeys(scope, bucket, options = {}) {
      assertNames({ scope, bucket });
      const limit = options.limit ?? 100;
      assertInteger("limit", limit, 1, 10_000);
      if (options.cursor !== undefined) assertName("cursor", options.cursor);
      const conditions = [sql`scope = ${scope}`, sql`bucket = ${bucket}`, isLive];
      if (options.cursor !== undefined) conditions.push(sql`key > ${options.cursor}`);
      if (options.prefix) {
        assertName("prefix", options.prefix);
        conditions.push(sql`key >= ${options.prefix}`);
        const end = prefixEnd(options.prefix);
        if (end !== null) conditions.push(sql`key < ${end}`);
      }
      const result = await guarded(() =>
        sql<{ key: string }>`
          select key from broker_kv where ${sql.join(conditions, sql` and `)}
          order by key limit ${limit + 1}`.execute(db),
      );
      const keys = result.rows.slice(0, limit).map((row) => row.key);
      return { keys, next: result.rows.length > limit ? (keys.at(-1) ?? null) : null };
    },

    async kvCompareAndSet(scope, bucket, key, value, expectedRevision, options) {
      assertNames({ scope, bucket, key });
      assertInteger("expectedRevision", expectedRevision, 0);
      const ms = ttlMs(options);
      if (options?.maxBytes !== undefined) assertInteger("maxBytes", options.maxBytes, 0);
      return guarded(() =>
        quotas.kv(scope, bucket, key, value, options?.maxBytes, () =>
          compareAndSet(scope, bucket, key, value, expectedRevision, ms),
        ),
      );
    },

    async kvDeleteBucket(scope, bucket) {
      assertNames({ scope, bucket });
      const result = await guarded(() =>
        sql<{ keys: number; expiring: number }>`
          with deleted as (
            delete from broker_kv where scope = ${scope} and bucket = ${bucket}
            returning ${isLive} as live, expires_at is not null as expiring
          )
          select count(*) filter (where live)::int as keys, count(*) filter (where live and expiring)::int as expiring
          from deleted`.execute(db),
      );
      const row = result.rows[0];
      return { keys: row?.keys ?? 0, expiring: row?.expiring ?? 0 };
    },
  };
}
