import type { DatabaseHandle } from "@platform/db";
import { sql } from "kysely";
import { assertInteger, assertName, assertNames, assertNonNegative } from "../arguments.ts";
import type { KvPort, KvPutOptions } from "../port.ts";
import { guarded } from "./failures.ts";

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
 * KV in one table. Revisions come from one sequence, so they grow with every write and
 * are never reused. Expired rows are invisible at once (every read filters them) and
 * removed by the adapter's periodic sweep.
 */
export function postgresKv(handle: DatabaseHandle): KvPort {
  const db = handle.db;

  async function currentRevision(scope: string, bucket: string, key: string): Promise<number> {
    const result = await sql<{ revision: number }>`
      select revision from broker_kv where scope = ${scope} and bucket = ${bucket} and key = ${key} and ${isLive}`.execute(
      db,
    );
    return result.rows[0]?.revision ?? 0;
  }

  return {
    async kvPut(scope, bucket, key, value, options) {
      assertNames({ scope, bucket, key });
      const ms = ttlMs(options);
      const result = await guarded(() =>
        sql<{ revision: number }>`
          insert into broker_kv as kv (scope, bucket, key, value, revision, modified_at, expires_at)
          values (${scope}, ${bucket}, ${key}, ${value}, nextval('broker_kv_revision'), clock_timestamp(), ${expiresAt(ms)})
          on conflict (scope, bucket, key) do update
          set value = excluded.value, revision = excluded.revision, modified_at = excluded.modified_at, expires_at = excluded.expires_at
          returning revision`.execute(db),
      );
      return { revision: Number(result.rows[0]?.revision) };
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
        sql<{ live: boolean }>`
          delete from broker_kv where scope = ${scope} and bucket = ${bucket} and key = ${key}
          returning ${isLive} as live`.execute(db),
      );
      return result.rows[0]?.live === true;
    },

    async kvKeys(scope, bucket, options = {}) {
      assertNames({ scope, bucket });
      const limit = options.limit ?? 100;
      assertInteger("limit", limit, 1, 10_000);
      if (options.cursor !== undefined) assertName("cursor", options.cursor);
      const after = options.cursor === undefined ? sql`true` : sql`key > ${options.cursor}`;
      const result = await guarded(() =>
        sql<{ key: string }>`
          select key from broker_kv
          where scope = ${scope} and bucket = ${bucket} and ${after} and ${isLive}
          order by key limit ${limit + 1}`.execute(db),
      );
      const keys = result.rows.slice(0, limit).map((row) => row.key);
      return { keys, next: result.rows.length > limit ? (keys.at(-1) ?? null) : null };
    },

    async kvCompareAndSet(scope, bucket, key, value, expectedRevision, options) {
      assertNames({ scope, bucket, key });
      assertInteger("expectedRevision", expectedRevision, 0);
      const ms = ttlMs(options);
      const written = await guarded(() =>
        expectedRevision === 0
          ? sql<{ revision: number }>`
              insert into broker_kv as kv (scope, bucket, key, value, revision, modified_at, expires_at)
              values (${scope}, ${bucket}, ${key}, ${value}, nextval('broker_kv_revision'), clock_timestamp(), ${expiresAt(ms)})
              on conflict (scope, bucket, key) do update
              set value = excluded.value, revision = excluded.revision, modified_at = excluded.modified_at, expires_at = excluded.expires_at
              where kv.expires_at is not null and kv.expires_at <= clock_timestamp()
              returning revision`.execute(db)
          : sql<{ revision: number }>`
              update broker_kv
              set value = ${value}, revision = nextval('broker_kv_revision'), modified_at = clock_timestamp(), expires_at = ${expiresAt(ms)}
              where scope = ${scope} and bucket = ${bucket} and key = ${key} and revision = ${expectedRevision} and ${isLive}
              returning revision`.execute(db),
      );
      const row = written.rows[0];
      if (row) return { ok: true, revision: Number(row.revision) };
      return { ok: false, revision: await guarded(() => currentRevision(scope, bucket, key)) };
    },

    async kvDeleteBucket(scope, bucket) {
      assertNames({ scope, bucket });
      const result = await guarded(() =>
        sql<{ n: number }>`
          with deleted as (delete from broker_kv where scope = ${scope} and bucket = ${bucket} returning ${isLive} as live)
          select count(*) filter (where live)::int as n from deleted`.execute(db),
      );
      return result.rows[0]?.n ?? 0;
    },
  };
}
