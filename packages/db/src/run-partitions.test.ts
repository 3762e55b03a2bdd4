import { describe, expect, test } from "bun:test";
import { sql } from "kysely";
import { Migrator } from "kysely/migration";
import { type DatabaseHandle, openDatabase } from "./connection.ts";
import { migrations } from "./migrations/index.ts";
import { migrateToLatest } from "./migrator.ts";
import { addRunPartitions, dropRunPartitionsBefore, runPartitions } from "./run-partitions.ts";
import { createScratchPostgres, databaseBackends, openTestDatabase, type TestBackend } from "./testing.ts";

const DAY_MS = 86_400_000;
const FLOW = "0194ab12-0000-4000-8000-000000000001";

/** An account with one flow, for runs to belong to. */
async function seed(db: DatabaseHandle["db"]): Promise<void> {
  await sql`insert into accounts (id, name, display_name, root_email) values ('a1', 'a', 'A', 'a@x.io')`.execute(db);
  await sql`
    insert into flows (id, account_id, name, description, active, trigger, webhook_id, revision)
    values (${FLOW}::uuid, 'a1', 'f', '', true, '{"type":"webhook"}', 'wh1', 1)`.execute(db);
}

/** A run accepted at `at` (and one step of it), ended unless `status` says otherwise. */
async function insertRun(db: DatabaseHandle["db"], at: number, status = "succeeded", deliveryId?: string) {
  const id = Bun.randomUUIDv7("hex", at);
  await sql`
    insert into runs (id, account_id, flow_id, revision, status, trigger, delivery_id)
    values (${id}::uuid, 'a1', ${FLOW}::uuid, 1, ${status}, '{}', ${deliveryId ?? null})`.execute(db);
  await sql`insert into run_steps (run_id, name, record) values (${id}::uuid, 's', '{}')`.execute(db);
  return id;
}

async function count(db: DatabaseHandle["db"], table: "runs" | "run_steps"): Promise<number> {
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from ${sql.table(table)}`.execute(db);
  return rows[0]?.n ?? 0;
}

/** A database migrated up to the last schema before runs were partitioned. */
async function openBeforePartitioning(
  backend: TestBackend,
): Promise<{ handle: DatabaseHandle; drop(): Promise<void> }> {
  if (backend === "pglite") {
    const handle = await openDatabase({ kind: "pglite" });
    return { handle, drop: async () => {} };
  }
  const scratch = await createScratchPostgres();
  const handle = await openDatabase({ kind: "postgres", url: scratch.url, poolSize: 2 });
  return { handle, drop: () => scratch.drop() };
}

for (const { backend, skip } of databaseBackends()) {
  describe.skipIf(Boolean(skip))(`runs partitioned by day on ${backend}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    test("days are added ahead; a past day goes whole with its steps unless a run of it is still live", async () => {
      const handle = await openTestDatabase(backend);
      try {
        const db = handle.db;
        await seed(db);
        const [legacy] = await runPartitions(db);
        expect(legacy).toMatchObject({ name: "runs_legacy", from: null });
        const firstDay = legacy?.to ?? 0;
        expect(firstDay % DAY_MS).toBe(0);

        // Two processes' jobs at once add each day once.
        const [one, other] = await Promise.all([
          addRunPartitions(db, firstDay + 2 * DAY_MS),
          addRunPartitions(db, firstDay + 2 * DAY_MS),
        ]);
        const day = (offset: number) =>
          new Date(firstDay + offset * DAY_MS).toISOString().slice(0, 10).replaceAll("-", "");
        expect([...one, ...other].sort()).toEqual(
          [...[0, 1, 2].map((d) => `runs_${day(d)}`), ...[0, 1, 2].map((d) => `run_steps_${day(d)}`)].sort(),
        );
        // Again: nothing more to add.
        expect(await addRunPartitions(db, firstDay + 2 * DAY_MS)).toEqual([]);
        expect((await runPartitions(db, "run_steps")).map((p) => p.to)).toEqual(
          (await runPartitions(db)).map((p) => p.to),
        );

        await insertRun(db, firstDay - DAY_MS);
        await insertRun(db, firstDay + 1000);
        const live = await insertRun(db, firstDay + DAY_MS + 1000, "queued");
        const later = await insertRun(db, firstDay + 2 * DAY_MS + 1000);
        // An id of a day with no partition yet is refused, not stored somewhere else.
        await expect(insertRun(db, firstDay + 3 * DAY_MS + 1000)).rejects.toThrow(/no partition/);

        // Everything up to the end of the second day is past: the legacy partition and day 0 go; day 1 keeps its live run.
        const dropped = await Promise.all([
          dropRunPartitionsBefore(db, firstDay + 2 * DAY_MS),
          dropRunPartitionsBefore(db, firstDay + 2 * DAY_MS),
        ]);
        expect(dropped.flat().sort()).toEqual([`runs_${day(0)}`, "runs_legacy"].sort());
        const left = await sql<{ id: string }>`select id from runs order by id`.execute(db);
        expect(left.rows.map((r) => r.id)).toEqual([live, later]);
        const steps = await sql<{ run_id: string }>`select run_id from run_steps order by run_id`.execute(db);
        expect(steps.rows.map((r) => r.run_id)).toEqual([live, later]);
        expect((await runPartitions(db, "run_steps")).map((p) => p.name)).toEqual([
          `run_steps_${day(1)}`,
          `run_steps_${day(2)}`,
        ]);

        // Once its run has ended, day 1 goes too; deleting a run still takes its steps with it.
        await sql`update runs set status = 'succeeded' where id = ${live}::uuid`.execute(db);
        expect(await dropRunPartitionsBefore(db, firstDay + 2 * DAY_MS)).toEqual([`runs_${day(1)}`]);
        await sql`delete from runs where id = ${later}::uuid`.execute(db);
        expect([await count(db, "runs"), await count(db, "run_steps")]).toEqual([0, 0]);
      } finally {
        await handle.close();
      }
    });

    test("a table of runs made before partitioning keeps every run, step and delivery id through the migration", async () => {
      const { handle, drop } = await openBeforePartitioning(backend);
      try {
        const db = handle.db;
        const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } });
        expect((await migrator.migrateTo("20261126090000_concurrency_held_slots")).error).toBeUndefined();
        await seed(db);
        const now = Date.now();
        const ids = [
          await insertRun(db, now - 40 * DAY_MS),
          await insertRun(db, now - DAY_MS, "succeeded", "evt_1"),
          await insertRun(db, now, "queued"),
        ];

        const applied = await migrateToLatest(db);
        expect(applied).toContain("20261127020400_run_steps_partitioned");
        const partitioned = await sql<{ name: string }>`
          select c.relname as name from pg_partitioned_table p join pg_class c on c.oid = p.partrelid
          order by 1`.execute(db);
        expect(partitioned.rows.map((r) => r.name)).toEqual(["run_steps", "runs"]);
        const [legacy] = await runPartitions(db);
        expect(legacy).toMatchObject({ name: "runs_legacy", from: null });
        // The bound is the midnight a week on: every run so far, and those of the coming days, are in it.
        expect((legacy?.to ?? 0) - now).toBeGreaterThan(6 * DAY_MS);
        const kept = await sql<{ id: string }>`select id from runs_legacy order by id`.execute(db);
        expect(kept.rows.map((r) => r.id)).toEqual(ids);
        expect(await count(db, "run_steps")).toBe(3);
        const claims = await sql`select flow_id, delivery_id, run_id from run_deliveries`.execute(db);
        expect(claims.rows).toEqual([{ flow_id: FLOW, delivery_id: "evt_1", run_id: ids[1] }]);
        // Deleting a run still takes its steps; the bounds' constraints are gone with their work done.
        await sql`delete from runs where id = ${ids[0]}::uuid`.execute(db);
        expect(await count(db, "run_steps")).toBe(2);
        const checks = await sql`
          select conname from pg_constraint where conname like '%partition_bound'`.execute(db);
        expect(checks.rows).toEqual([]);
        // New days attach after the legacy partition, and take runs.
        await addRunPartitions(db, (legacy?.to ?? 0) + 1);
        await insertRun(db, (legacy?.to ?? 0) + 1000);
        expect(await count(db, "runs")).toBe(3);
      } finally {
        await handle.close();
        await drop();
      }
    });

    test("a run's end rewrites its row in place: a new day's page keeps room, and no index names what an end changes", async () => {
      const handle = await openTestDatabase(backend);
      try {
        const db = handle.db;
        await seed(db);
        const [created] = await addRunPartitions(db, ((await runPartitions(db))[0]?.to ?? 0) + 1);
        const { rows: options } = await sql<{ options: string[] | null }>`
          select reloptions as options from pg_class where relname = ${created ?? ""}`.execute(db);
        expect(options[0]?.options).toEqual(["fillfactor=70"]);
        const id = await insertRun(db, (await runPartitions(db)).at(-1)?.from ?? 0, "queued");
        // The columns the worker's end write (engine/store.ts) and a cancel (run-ends.ts) change.
        const hot = await db.transaction().execute(async (trx) => {
          await sql`
            update runs set status = 'succeeded', error = null, held_by = null, slot_key = null, singleton_key = null,
              started_at = now(), lease_until = now(), finished_at = now(), recorded_bytes = 10
            where id = ${id}::uuid`.execute(trx);
          const { rows } = await sql<{ n: string }>`
            select pg_stat_get_xact_tuples_hot_updated(${created ?? ""}::regclass) as n`.execute(trx);
          return Number(rows[0]?.n);
        });
        expect(hot).toBe(1);
      } finally {
        await handle.close();
      }
    });

    test("a run deleted takes its steps, a flow deleted its runs, their steps and its delivery ids", async () => {
      const handle = await openTestDatabase(backend);
      try {
        const db = handle.db;
        await seed(db);
        const now = Date.now();
        const [first, second] = [await insertRun(db, now - 1000), await insertRun(db, now, "succeeded", "evt_1")];
        await sql`
          insert into run_deliveries (flow_id, delivery_id, run_id) values (${FLOW}::uuid, 'evt_1', ${second}::uuid)`.execute(
          db,
        );
        await sql`delete from runs where id = ${first}::uuid`.execute(db);
        const { rows: left } = await sql<{ run_id: string }>`select run_id from run_steps`.execute(db);
        expect(left.map((row) => row.run_id)).toEqual([second]);
        await sql`delete from flows where id = ${FLOW}::uuid`.execute(db);
        expect(await count(db, "runs")).toBe(0);
        expect(await count(db, "run_steps")).toBe(0);
        const { rows: deliveries } = await sql<{ n: number }>`select count(*)::int as n from run_deliveries`.execute(
          db,
        );
        expect(deliveries[0]?.n).toBe(0);
      } finally {
        await handle.close();
      }
    });
  });
}
