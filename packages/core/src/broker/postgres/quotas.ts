import type { DatabaseHandle } from "@platform/db";
import { sql } from "kysely";
import { QuotaExceeded } from "../port.ts";

/**
 * Quotas on the PostgreSQL broker: a write under a quota reads its scope's use and writes
 * only if it stays within, and the writes under quota of one scope go one after another,
 * so that two cannot both pass on the same reading. The PostgreSQL broker serves one
 * process (embedded mode), so ordering them here is ordering them all; the counts
 * themselves are kept by the database (`broker_usage`, migration 20261125030000).
 */
export function createQuotaGate(handle: DatabaseHandle) {
  const tails = new Map<string, Promise<unknown>>();

  /** Runs `work` after the scope's earlier writes under quota have settled. */
  function inTurn<T>(scope: string, work: () => Promise<T>): Promise<T> {
    const turn = (tails.get(scope) ?? Promise.resolve()).then(work, work);
    const tail = turn.then(
      () => undefined,
      () => undefined,
    );
    tails.set(scope, tail);
    void tail.then(() => {
      if (tails.get(scope) === tail) tails.delete(scope);
    });
    return turn;
  }

  async function used(scope: string, name: "kv_bytes" | "stream_bytes"): Promise<number> {
    const result = await sql<{ value: string }>`
      select value::text from broker_usage where scope = ${scope} and name = ${name}`.execute(handle.db);
    return Number(result.rows[0]?.value ?? 0);
  }

  return {
    /** A KV write of `key` with `value`, refused when the scope's KV bytes would pass `maxBytes`. */
    kv<T>(
      scope: string,
      bucket: string,
      key: string,
      value: string,
      maxBytes: number | undefined,
      write: () => Promise<T>,
    ) {
      if (maxBytes === undefined) return write();
      return inTurn(scope, async () => {
        // Expired keys still count until they are removed: a write under quota removes the scope's first.
        await sql`delete from broker_kv where scope = ${scope} and expires_at <= clock_timestamp()`.execute(handle.db);
        const found = await sql<{ kept: number }>`
          select octet_length(key) + octet_length(value) as kept from broker_kv
          where scope = ${scope} and bucket = ${bucket} and key = ${key}`.execute(handle.db);
        const growth = Buffer.byteLength(key) + Buffer.byteLength(value) - Number(found.rows[0]?.kept ?? 0);
        const now = await used(scope, "kv_bytes");
        if (now + growth > maxBytes) throw new QuotaExceeded("bytes", now, maxBytes);
        return write();
      });
    },

    /** An append to a numbered stream, refused by its entries and bytes quotas. */
    stream<T>(
      scope: string,
      stream: string,
      payload: string,
      quota: { maxBytes?: number; maxEntries?: number },
      write: () => Promise<T>,
    ) {
      if (quota.maxBytes === undefined && quota.maxEntries === undefined) return write();
      return inTurn(scope, async () => {
        if (quota.maxEntries !== undefined) {
          const length = await sql<{ n: string }>`
            select (s.last_id - coalesce(
              (select min(id) from broker_stream_entries where scope = ${scope} and stream = ${stream}), s.last_id + 1) + 1)::text as n
            from broker_streams as s where s.scope = ${scope} and s.stream = ${stream}`.execute(handle.db);
          const entries = Number(length.rows[0]?.n ?? 0);
          if (entries >= quota.maxEntries) throw new QuotaExceeded("entries", entries, quota.maxEntries);
        }
        if (quota.maxBytes !== undefined) {
          const now = await used(scope, "stream_bytes");
          if (now + Buffer.byteLength(payload) > quota.maxBytes) throw new QuotaExceeded("bytes", now, quota.maxBytes);
        }
        return write();
      });
    },

    /** What the scope keeps. */
    async usage(scope: string) {
      const result = await sql<{ name: string; value: string }>`
        select name, value::text from broker_usage where scope = ${scope}`.execute(handle.db);
      const value = (name: string) => Number(result.rows.find((row) => row.name === name)?.value ?? 0);
      return { kvBytes: value("kv_bytes"), streamBytes: value("stream_bytes") };
    },
  };
}

export type QuotaGate = ReturnType<typeof createQuotaGate>;
