import type { DatabaseHandle } from "@platform/db";
import { sql } from "kysely";
import { DomainError } from "../../errors.ts";
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
import type { DeliveredEntry, StreamEntry, StreamPort, TrimOptions } from "../port.ts";
import { appendBatches } from "./append-batches.ts";
import { guarded, parseEntryId, parseEntryIds } from "./failures.ts";
import type { QuotaGate } from "./quotas.ts";
import { type TopicListener, type TopicWatch, topicOf, watchTopic } from "./wakeups.ts";

/** Longest a blocked reader sleeps between checks, in case a notification was lost (listener reconnect). */
const MAX_SLEEP_MS = 1000;

interface EntryRow {
  id: number;
  payload: string;
  ts: number;
}

const toEntry = (row: EntryRow): StreamEntry => ({
  id: String(row.id),
  payload: row.payload,
  timestamp: Math.floor(row.ts),
});

const byName = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

const groupMissing = () => new DomainError("not_found", "the consumer group does not exist");

/**
 * Streams in tables. Correct by construction on PGlite, where SKIP LOCKED never skips
 * and one transaction runs at a time:
 * - an append takes the stream row's lock to number its entries, so entries commit in id order
 *   (concurrent appends to one stream share a statement: see append-batches.ts);
 * - a group read locks the group row for one short transaction, hands out the next entries
 *   after its cursor (key-share locked, so a concurrent trim is waited for, not tripped over),
 *   records them as pending and moves the cursor: no entry goes to two members;
 * - a claim is one UPDATE whose WHERE re-checks the idle deadline on the row it locked;
 * - no transaction is held while waiting: a blocking read polls, woken early by LISTEN/NOTIFY.
 */
export function postgresStreams(
  handle: DatabaseHandle,
  appended: TopicListener,
  isClosed: () => boolean,
  quotas: QuotaGate,
): StreamPort {
  const append = appendBatches(handle);
  const db = handle.db;
  /** By group and consumer: the watch of a blocking read that left its stream drained (see `readGroup`). */
  const drained = new Map<string, TopicWatch>();

  /**
   * Hands out up to `count` undelivered entries; [] when there are none. One statement (the
   * function `broker_read_group`, whose plan the session keeps): it looks at the cursor
   * without a lock and, only when the stream has entries past it, locks the group's row (read
   * as its newest version, whoever moved it meanwhile), takes the entries after it, key-share
   * locked (an entry a concurrent trim is deleting is waited for and skipped, and a trim that
   * comes after waits for this read, whose pending rows its trigger then deletes), records
   * them as pending and moves the cursor. Entries commit in id order (see `appendBatches`), so
   * those this statement's snapshot does not see yet all come after the ones it takes.
   */
  async function readNew(scope: string, stream: string, group: string, consumer: string, count: number) {
    type Row = { found: boolean } & ({ [K in keyof EntryRow]: EntryRow[K] } | { [K in keyof EntryRow]: null });
    const { rows } = await sql<Row>`
      select found, id, payload, ts from broker_read_group(${scope}, ${stream}, ${group}, ${consumer}, ${count})`.execute(
      db,
    );
    if (!rows[0]?.found) throw groupMissing();
    return rows.filter((row): row is Row & EntryRow => row.id !== null);
  }

  async function assertGroupExists(scope: string, stream: string, group: string): Promise<void> {
    const found = await sql`
      select 1 from broker_stream_groups where scope = ${scope} and stream = ${stream} and group_name = ${group}`.execute(
      db,
    );
    if (found.rows.length === 0) throw groupMissing();
  }

  function assertIdle(what: string, ms: number): number {
    assertNonNegative(what, ms);
    return Math.min(ms, MAX_IDLE_MS);
  }

  /** Removes entries beyond `maxLength` and older than `maxAgeMs`; returns how many. */
  async function trim(scope: string, stream: string, options: TrimOptions): Promise<number> {
    assertTrimOptions(options);
    let removed = 0;
    if (options.maxLength !== undefined) {
      // Entries of a stream are always one contiguous run of ids ending at last_id.
      const result = await guarded(() =>
        sql`
          delete from broker_stream_entries e using broker_streams s
          where s.scope = ${scope} and s.stream = ${stream}
            and e.scope = s.scope and e.stream = s.stream and e.id <= s.last_id - ${options.maxLength}::bigint`.execute(
          db,
        ),
      );
      removed += Number(result.numAffectedRows ?? 0);
    }
    if (options.maxAgeMs !== undefined) {
      // Entries are appended in time order, so the old ones are the ids before the first young one.
      const result = await guarded(() =>
        sql`
          delete from broker_stream_entries e using broker_streams s
          where s.scope = ${scope} and s.stream = ${stream} and e.scope = s.scope and e.stream = s.stream
            and e.id < coalesce(
              (select id from broker_stream_entries
               where scope = ${scope} and stream = ${stream}
                 and created_at >= clock_timestamp() - ${options.maxAgeMs}::float8 * interval '1 millisecond'
               order by id limit 1),
              s.last_id + 1)`.execute(db),
      );
      removed += Number(result.numAffectedRows ?? 0);
    }
    return removed;
  }

  /** Entries after id `after`, oldest first. */
  async function readAfter(scope: string, stream: string, after: number, limit: number): Promise<EntryRow[]> {
    assertInteger("limit", limit, 1, 10_000);
    const result = await guarded(() =>
      sql<EntryRow>`
        select id, payload, extract(epoch from created_at)::float8 * 1000 as ts from broker_stream_entries
        where scope = ${scope} and stream = ${stream} and id > ${after}
        order by id limit ${limit}`.execute(db),
    );
    return result.rows;
  }

  return {
    async append(scope, stream, payload) {
      assertNames({ scope, stream });
      return append(scope, stream, payload);
    },

    async ensureGroup(scope, stream, group, options = {}) {
      assertNames({ scope, stream, group });
      const fromEnd = options.startAt === "end";
      await guarded(() =>
        db.transaction().execute(async (trx) => {
          await sql`
            insert into broker_streams (scope, stream, last_id) values (${scope}, ${stream}, 0)
            on conflict (scope, stream) do nothing`.execute(trx);
          await sql`
            insert into broker_stream_groups (scope, stream, group_name, last_delivered_id)
            select scope, stream, ${group}, case when ${fromEnd} then last_id else 0 end
            from broker_streams where scope = ${scope} and stream = ${stream}
            on conflict (scope, stream, group_name) do nothing`.execute(trx);
        }),
      );
    },

    async readGroup(scope, stream, group, consumer, options = {}) {
      assertNames({ scope, stream, group, consumer });
      const { count, blockMs } = groupReadOptions(options);
      const toDelivered = (rows: EntryRow[]) => rows.map((row): DeliveredEntry => ({ ...toEntry(row), deliveries: 1 }));
      if (blockMs === 0) return toDelivered(await guarded(() => readNew(scope, stream, group, consumer, count)));

      const deadline = Date.now() + blockMs;
      await guarded(() => appended.start());
      // A read that left the stream drained keeps its watch for the consumer's next read, which
      // then waits for a notice before it looks: nothing can be past the cursor without one.
      const key = `${scope}\u0000${stream}\u0000${group}\u0000${consumer}`;
      const carried = drained.get(key);
      drained.delete(key);
      const watch = carried ?? watchTopic(appended, topicOf(scope, stream));
      let keep = false;
      try {
        if (carried) await watch.wait(Math.min(blockMs, MAX_SLEEP_MS));
        for (;;) {
          if (isClosed()) return [];
          watch.reset();
          keep = false;
          const rows = await guarded(() => readNew(scope, stream, group, consumer, count));
          keep = rows.length < count;
          if (rows.length > 0) return toDelivered(rows);
          const remaining = deadline - Date.now();
          if (remaining <= 0) return [];
          await watch.wait(Math.min(remaining, MAX_SLEEP_MS));
        }
      } finally {
        if (keep && !isClosed() && !drained.has(key)) drained.set(key, watch);
        else watch.close();
      }
    },

    async ack(scope, stream, group, ids) {
      assertNames({ scope, stream, group });
      if (ids.length === 0) return 0;
      const idArray = parseEntryIds(ids);
      const result = await guarded(() =>
        sql`
          delete from broker_stream_pending
          where scope = ${scope} and stream = ${stream} and group_name = ${group} and entry_id = any(${idArray}::bigint[])`.execute(
          db,
        ),
      );
      return Number(result.numAffectedRows ?? 0);
    },

    async claimIdle(scope, stream, group, consumer, minIdleMs, count) {
      assertNames({ scope, stream, group, consumer });
      assertInteger("minIdleMs", minIdleMs, 0);
      assertInteger("count", count, 1, 10_000);
      const claimed = await guarded(() =>
        sql<EntryRow & { deliveries: number }>`
          with candidates as (
            select entry_id from broker_stream_pending
            where scope = ${scope} and stream = ${stream} and group_name = ${group}
              and delivered_at <= clock_timestamp() - ${minIdleMs}::float8 * interval '1 millisecond'
            order by entry_id limit ${count}
            for update skip locked
          ), claimed as (
            update broker_stream_pending p
            set consumer = ${consumer}, delivered_at = clock_timestamp(), deliveries = p.deliveries + 1
            from candidates c
            where p.scope = ${scope} and p.stream = ${stream} and p.group_name = ${group} and p.entry_id = c.entry_id
              and p.delivered_at <= clock_timestamp() - ${minIdleMs}::float8 * interval '1 millisecond'
            returning p.entry_id, p.deliveries
          )
          select e.id, e.payload, extract(epoch from e.created_at)::float8 * 1000 as ts, c.deliveries
          from claimed c join broker_stream_entries e on e.scope = ${scope} and e.stream = ${stream} and e.id = c.entry_id
          order by e.id`.execute(db),
      );
      if (claimed.rows.length === 0) await guarded(() => assertGroupExists(scope, stream, group));
      return claimed.rows.map((row) => ({ ...toEntry(row), deliveries: Number(row.deliveries) }));
    },

    async touch(scope, stream, group, consumer, ids) {
      assertNames({ scope, stream, group, consumer });
      if (ids.length === 0) return 0;
      const idArray = parseEntryIds(ids);
      const result = await guarded(() =>
        sql`
          update broker_stream_pending set delivered_at = clock_timestamp()
          where scope = ${scope} and stream = ${stream} and group_name = ${group}
            and consumer = ${consumer} and entry_id = any(${idArray}::bigint[])`.execute(db),
      );
      return Number(result.numAffectedRows ?? 0);
    },

    async release(scope, stream, group, consumer, ids, idleMs = MAX_IDLE_MS) {
      assertNames({ scope, stream, group, consumer });
      const idle = assertIdle("idleMs", idleMs);
      if (ids.length === 0) return;
      const idArray = parseEntryIds(ids);
      await guarded(() =>
        sql`
          update broker_stream_pending
          set delivered_at = clock_timestamp() - ${idle}::float8 * interval '1 millisecond'
          where scope = ${scope} and stream = ${stream} and group_name = ${group}
            and consumer = ${consumer} and entry_id = any(${idArray}::bigint[])`.execute(db),
      );
    },

    async pendingCount(scope, stream, group) {
      assertNames({ scope, stream, group });
      const result = await guarded(() =>
        sql<{ n: number }>`
          select count(*)::int as n from broker_stream_pending
          where scope = ${scope} and stream = ${stream} and group_name = ${group}`.execute(db),
      );
      return result.rows[0]?.n ?? 0;
    },

    // A member is a name on its pending rows: one holding nothing is not kept, so none is forgotten here.
    async consumers(scope, stream, group) {
      assertNames({ scope, stream, group });
      const result = await guarded(() =>
        sql<{ name: string; pending: number; idle_ms: number }>`
          select consumer as name, count(*)::int as pending,
            greatest(0, extract(epoch from clock_timestamp() - max(delivered_at)) * 1000)::float8 as idle_ms
          from broker_stream_pending
          where scope = ${scope} and stream = ${stream} and group_name = ${group}
          group by consumer`.execute(db),
      );
      return result.rows
        .map((row) => ({ name: row.name, pending: row.pending, idleMs: Math.floor(row.idle_ms) }))
        .sort(byName);
    },

    async removeIdleConsumers(scope, stream, group, minIdleMs) {
      assertNames({ scope, stream, group });
      assertNonNegative("minIdleMs", minIdleMs);
      return [];
    },

    async length(scope, stream) {
      assertNames({ scope, stream });
      const result = await guarded(() =>
        sql<{ n: number }>`
          select count(*)::int as n from broker_stream_entries where scope = ${scope} and stream = ${stream}`.execute(
          db,
        ),
      );
      return result.rows[0]?.n ?? 0;
    },

    async trim(scope, stream, options) {
      assertNames({ scope, stream });
      return trim(scope, stream, options);
    },

    async trimAcknowledged(scope, stream) {
      assertNames({ scope, stream });
      // Each group needs its oldest pending entry, or else the one after its read position.
      const result = await guarded(() =>
        sql`
          delete from broker_stream_entries
          where scope = ${scope} and stream = ${stream}
            and id < (
              select min(coalesce(
                (select min(p.entry_id) from broker_stream_pending p
                 where p.scope = g.scope and p.stream = g.stream and p.group_name = g.group_name),
                g.last_delivered_id + 1))
              from broker_stream_groups g where g.scope = ${scope} and g.stream = ${stream})`.execute(db),
      );
      return Number(result.numAffectedRows ?? 0);
    },

    async readRange(scope, stream, options = {}) {
      assertNames({ scope, stream });
      if (options.after !== undefined) assertName("after", options.after);
      const after = options.after === undefined ? 0 : parseEntryId(options.after);
      return (await readAfter(scope, stream, after, options.limit ?? 100)).map(toEntry);
    },

    async deleteStream(scope, stream) {
      assertNames({ scope, stream });
      const result = await guarded(() =>
        db.transaction().execute(async (trx) => {
          await sql`delete from broker_lane_entries where scope = ${scope} and stream = ${stream}`.execute(trx);
          await sql`delete from broker_lanes where scope = ${scope} and stream = ${stream}`.execute(trx);
          return sql`delete from broker_streams where scope = ${scope} and stream = ${stream}`.execute(trx);
        }),
      );
      return Number(result.numAffectedRows ?? 0) > 0;
    },

    // Entry ids here are already the stream's own numbers, handed out from `last_id`.
    async appendNumbered(scope, stream, payload, options, quota = {}) {
      assertNames({ scope, stream });
      if (options) assertTrimOptions(options);
      assertQuota(quota);
      return guarded(() =>
        quotas.stream(scope, stream, payload, quota, async () => {
          const seq = Number(await append(scope, stream, payload));
          if (options) await trim(scope, stream, options);
          return seq;
        }),
      );
    },

    async readNumbered(scope, stream, options = {}) {
      assertNames({ scope, stream });
      const afterSeq = options.afterSeq ?? 0;
      assertInteger("afterSeq", afterSeq, 0);
      const rows = await readAfter(scope, stream, afterSeq, options.limit ?? 100);
      return rows.map((row) => ({ seq: Number(row.id), payload: row.payload, timestamp: Math.floor(row.ts) }));
    },
  };
}
