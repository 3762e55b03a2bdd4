import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { DatabaseHandle } from "@platform/db";
import { openTestDatabase, testEnv } from "@platform/db/testing";
import { sql } from "kysely";
import { createBroker } from "../index.ts";
import type { Broker } from "../port.ts";
import { randomScope } from "../test-backends.ts";

/** Races only a PostgreSQL server can run (PGlite runs one transaction at a time). */
describe.skipIf(!testEnv.DATABASE_URL)(
  `the PostgreSQL adapter under concurrent transactions${testEnv.DATABASE_URL ? "" : " (skipped: DATABASE_URL is not set)"}`,
  () => {
    let database: DatabaseHandle;
    let broker: Broker;
    beforeAll(async () => {
      database = await openTestDatabase("postgres");
      broker = await createBroker({ database });
    }, 60_000);
    afterAll(async () => {
      await broker?.close();
      await database?.close();
    });

    test("a group read racing a trim of the entries it picks skips them instead of failing", async () => {
      const scope = randomScope();
      await broker.ensureGroup(scope, "s", "g");
      const first = await broker.append(scope, "s", "trimmed meanwhile");
      await broker.append(scope, "s", "kept");

      const read = await database.db.connection().execute(async (trimmer) => {
        // A trim of the first entry, not committed yet, while the group reads.
        await sql`begin`.execute(trimmer);
        await sql`
          delete from broker_stream_entries
          where scope = ${scope} and stream = 's' and id = ${Number(first)}`.execute(trimmer);
        const reading = broker.readGroup(scope, "s", "g", "c", { count: 2 }).then(
          (entries) => entries.map((entry) => entry.payload),
          (error: unknown) => error,
        );
        await waitForLockWait(database);
        await sql`commit`.execute(trimmer);
        return reading;
      });

      expect(read).toEqual(["kept"]);
      expect(await broker.pendingCount(scope, "s", "g")).toBe(1);
    });

    test("one payload PostgreSQL refuses fails alone, not the appends to its stream made with it", async () => {
      const scope = randomScope();
      // A NUL character cannot be stored as text: PostgreSQL refuses the statement it is in.
      const payloads = Array.from({ length: 40 }, (_, n) => (n === 17 ? "bad\u0000" : `ok ${n}`));
      const settled = await Promise.allSettled(payloads.map((payload) => broker.append(scope, "s", payload)));
      expect(settled.flatMap((outcome, n) => (outcome.status === "rejected" ? [n] : []))).toEqual([17]);
      const read = await broker.readRange(scope, "s");
      expect(read.map((entry) => entry.payload)).toEqual(payloads.filter((_, n) => n !== 17));
      // Ids follow the order of the calls, with no gap where the refused one was.
      const ids = settled.flatMap((outcome) => (outcome.status === "fulfilled" ? [Number(outcome.value)] : []));
      expect(ids).toEqual(ids.map((_, n) => n + 1));
    });

    test("a trim takes the pending deliveries of the entries it deletes, a deleted stream its entries and deliveries", async () => {
      const scope = randomScope();
      await broker.ensureGroup(scope, "s", "g");
      for (const payload of ["one", "two", "three"]) await broker.append(scope, "s", payload);
      expect(await broker.readGroup(scope, "s", "g", "c", { count: 3 })).toHaveLength(3);
      expect(await broker.trim(scope, "s", { maxLength: 1 })).toBe(2);
      expect(await broker.pendingCount(scope, "s", "g")).toBe(1);

      const left = async () => {
        const { rows } = await sql<{ entries: number; pending: number }>`
          select (select count(*)::int from broker_stream_entries where scope = ${scope}) as entries,
            (select count(*)::int from broker_stream_pending where scope = ${scope}) as pending`.execute(database.db);
        return rows[0];
      };
      expect(await left()).toEqual({ entries: 1, pending: 1 });
      expect(await broker.deleteStream(scope, "s")).toBe(true);
      expect(await left()).toEqual({ entries: 0, pending: 0 });
    });
  },
);

/**
 * Waits until a session of this database waits for a lock (the read, blocked by the trim).
 * Asked on a connection of its own: a transaction sees one snapshot of pg_stat_activity.
 */
async function waitForLockWait(database: DatabaseHandle): Promise<void> {
  for (let i = 0; i < 500; i++) {
    const waiting = await sql<{ n: number }>`
      select count(*)::int as n from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock'`.execute(database.db);
    if ((waiting.rows[0]?.n ?? 0) > 0) return;
    await Bun.sleep(10);
  }
  throw new Error("the read never waited for the trim");
}
