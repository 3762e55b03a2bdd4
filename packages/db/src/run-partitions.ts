import { type Kysely, sql } from "kysely";
import type { Database } from "./schema.ts";

/**
 * Runs and their steps are range-partitioned by run id, a partition a UTC day. Run ids are
 * UUIDv7, whose first 48 bits are the millisecond of acceptance, so a day's runs are the ids
 * from `firstIdAt(midnight)` up to the next midnight's, and a run's steps (keyed by its id)
 * fall in the `run_steps` partition of the same bounds. The first partition of each table,
 * from MINVALUE, holds what the table held when it was partitioned (see migrations
 * 20261127020200_runs_partitioned and 20261127020400_run_steps_partitioned).
 *
 * Partitions are created ahead of time by the worker (`addRunPartitions`): an id with no
 * partition cannot be inserted. Retention drops a day's pair whole once the day is past and
 * none of its runs is still queued or running (`dropRunPartitionsBefore`).
 */

const DAY_MS = 86_400_000;

/**
 * How full (%) a runs partition's pages are filled by inserts: the rest is room for the new
 * version of their rows, so that a run's end rewrites its row in its page and touches none of
 * the table's indexes (a HOT update; see migration 20261202000000_runs_end_in_place).
 * Under load, ends come in batches that rewrite every row of a page in one statement, and a
 * page keeps room for two of its three 1.6 KB rows of the webhook bench: a quarter of its
 * ends left their page. At 50 every end stayed in place, but the database grew 40% more per
 * run, for no CPU the bench could tell apart.
 */
export const RUNS_FILLFACTOR = 70;

/** The tables partitioned by run id (runs on `id`, their steps on `run_id`). */
const PARTITIONED_TABLES = ["runs", "run_steps"] as const;
type PartitionedTable = (typeof PARTITIONED_TABLES)[number];

/**
 * How long adding or dropping a partition waits for its locks before giving up until the
 * job's next turn. Attaching a partition locks its parent against other attaches (and, for
 * a table with a foreign key, the table it names against writes), and detaching one locks
 * its parent whole, for a moment once they have the lock;
 * while they wait for it, the writes queued behind them wait too, at most this long.
 */
const LOCK_TIMEOUT_MS = 500;

/** The smallest UUIDv7 of a moment: every run accepted before it has a smaller id. */
export function firstIdAt(epochMs: number): string {
  const hex = Math.max(0, Math.floor(epochMs)).toString(16).padStart(12, "0");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7000-8000-000000000000`;
}

/** The smallest id of the day partition that a moment falls in (its UTC midnight's). */
export function firstIdOfDay(epochMs: number): string {
  return firstIdAt(epochMs - (epochMs % DAY_MS));
}

/** The millisecond a UUIDv7 was made in. */
export function idTime(id: string): number {
  return Number.parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
}

/** A partition of runs or of their steps: its name and bounds (ms; null for MINVALUE). */
export interface RunPartition {
  name: string;
  from: number | null;
  to: number;
}

/** The partitions of a table partitioned by run id, oldest first. */
export async function runPartitions(db: Kysely<Database>, table: PartitionedTable = "runs"): Promise<RunPartition[]> {
  const { rows } = await sql<{ name: string; bound: string | null }>`
    select c.relname as name, pg_get_expr(c.relpartbound, c.oid) as bound
    from pg_inherits i join pg_class c on c.oid = i.inhrelid
    where i.inhparent = ${table}::regclass`.execute(db);
  return rows
    .flatMap(({ name, bound }) => {
      // Detached by a concurrent drop since the catalog was read: no longer a partition.
      if (bound === null) return [];
      const match = /FROM \((.+)\) TO \((.+)\)/.exec(bound);
      if (!match?.[1] || !match[2]) throw new Error(`partition ${name} has bounds ${bound}, not a range of run ids`);
      const time = (value: string) => (value === "MINVALUE" ? null : idTime(value.replaceAll("'", "")));
      const to = time(match[2]);
      if (to === null) throw new Error(`partition ${name} has no upper bound`);
      return [{ name, from: time(match[1]), to }];
    })
    .sort((a, b) => a.to - b.to);
}

/** `runs_20261127`: the name of a day's partition. */
function dayName(table: string, dayMs: number): string {
  return `${table}_${new Date(dayMs).toISOString().slice(0, 10).replaceAll("-", "")}`;
}

/**
 * Creates the partitions of both tables for every day from the newest one's end until
 * `untilMs` is covered, a day per transaction. Each is made as a table of its own and then
 * attached, which takes only a SHARE UPDATE EXCLUSIVE lock on the parent (CREATE TABLE ...
 * PARTITION OF would take an ACCESS EXCLUSIVE one, stopping every insert behind whatever
 * holds the table). That lock is taken first and conflicts with itself, so two callers at
 * once (two processes' jobs) add each day once: the second finds it made. A lock not had
 * within LOCK_TIMEOUT_MS fails the call; the next one carries on where it stopped. Returns
 * the names of the partitions created.
 */
export async function addRunPartitions(db: Kysely<Database>, untilMs: number): Promise<string[]> {
  const created: string[] = [];
  for (const table of PARTITIONED_TABLES) {
    for (;;) {
      const name = await db.transaction().execute(async (trx) => {
        await sql`select set_config('lock_timeout', ${`${LOCK_TIMEOUT_MS}ms`}, true)`.execute(trx);
        await sql`lock table ${sql.id(table)} in share update exclusive mode`.execute(trx);
        const newest = (await runPartitions(trx, table)).at(-1);
        if (!newest) throw new Error(`${table} has no partition: it is not partitioned by run id yet`);
        if (newest.to > untilMs) return null;
        const day = newest.to;
        const name = dayName(table, day);
        const storage = table === "runs" ? sql` with (fillfactor = ${sql.lit(RUNS_FILLFACTOR)})` : sql``;
        await sql`create table ${sql.id(name)} (like ${sql.id(table)} including defaults)${storage}`.execute(trx);
        await sql`
          alter table ${sql.id(table)} attach partition ${sql.id(name)}
          for values from (${sql.lit(firstIdAt(day))}) to (${sql.lit(firstIdAt(day + DAY_MS))})`.execute(trx);
        return name;
      });
      if (name === null) break;
      created.push(name);
    }
  }
  return created;
}

/**
 * Drops the partitions (runs and their steps) wholly accepted before `beforeMs` that hold no
 * queued or running run. A partition holding one stays until it ends (the caller deletes its
 * ended runs row by row meanwhile). Each pair goes in one transaction that first locks the
 * runs partition, so that no run in it changes between the look and the drop; the steps
 * partition goes first, so that no step is ever without its run. A lock not had
 * within LOCK_TIMEOUT_MS fails the call (retention tries again on its next turn). Returns
 * the names of the runs partitions dropped.
 */
export async function dropRunPartitionsBefore(db: Kysely<Database>, beforeMs: number): Promise<string[]> {
  const steps = await runPartitions(db, "run_steps");
  const dropped: string[] = [];
  for (const partition of await runPartitions(db, "runs")) {
    if (partition.to > beforeMs) break;
    const ofSteps = steps.find((s) => s.to === partition.to && s.from === partition.from);
    const gone = await db.transaction().execute(async (trx) => {
      await sql`select set_config('lock_timeout', ${`${LOCK_TIMEOUT_MS}ms`}, true)`.execute(trx);
      // As in addRunPartitions: one caller at a time; a second finds the partition gone.
      await sql`lock table runs in share update exclusive mode`.execute(trx);
      const { rows } = await sql<{ there: string | null }>`select to_regclass(${partition.name}) as there`.execute(trx);
      if (rows[0]?.there === null) return false;
      await sql`lock table ${sql.id(partition.name)} in access exclusive mode`.execute(trx);
      const live = await sql`
        select 1 from ${sql.id(partition.name)} where status in ('queued', 'running') limit 1`.execute(trx);
      if (live.rows.length > 0) return false;
      if (ofSteps) {
        await sql`alter table run_steps detach partition ${sql.id(ofSteps.name)}`.execute(trx);
        await sql`drop table ${sql.id(ofSteps.name)}`.execute(trx);
      }
      await sql`alter table runs detach partition ${sql.id(partition.name)}`.execute(trx);
      await sql`drop table ${sql.id(partition.name)}`.execute(trx);
      return true;
    });
    if (gone) dropped.push(partition.name);
  }
  return dropped;
}
