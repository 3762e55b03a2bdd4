import { type Kysely, sql } from "kysely";
import { provedBound } from "./20261127020200_runs_partitioned.ts";

/**
 * `run_steps` becomes a table partitioned by run id, as `runs` did: the old table is renamed
 * `run_steps_legacy` and attached as the first partition, with the bounds its CHECK
 * constraint proves, and the partitioned table's primary key and foreign key adopt the old
 * table's (that foreign key was validated by the previous migration, so nothing is scanned).
 * The bounds' CHECK constraints have done their work and go. From here on the worker adds a
 * partition a day ahead of time (packages/db/src/run-partitions.ts).
 */
export async function up(db: Kysely<any>): Promise<void> {
  const bound = sql.lit(await provedBound(db, "run_steps", "run_steps_partition_bound"));
  await sql`alter table run_steps rename to run_steps_legacy`.execute(db);
  await sql`alter index run_steps_pkey rename to run_steps_legacy_pkey`.execute(db);
  await sql`alter table run_steps_legacy rename constraint run_steps_run_id_fkey to run_steps_legacy_run_id_fkey`.execute(
    db,
  );
  await sql`create table run_steps (like run_steps_legacy including defaults) partition by range (run_id)`.execute(db);
  await sql`alter table run_steps add constraint run_steps_pkey primary key (run_id, name)`.execute(db);
  await sql`
    alter table run_steps add constraint run_steps_run_id_fkey
    foreign key (run_id) references runs (id) on delete cascade`.execute(db);
  await sql`alter table run_steps attach partition run_steps_legacy for values from (minvalue) to (${bound})`.execute(
    db,
  );
  await sql`alter table runs_legacy drop constraint runs_partition_bound`.execute(db);
  await sql`alter table run_steps_legacy drop constraint run_steps_partition_bound`.execute(db);
}

export async function down(): Promise<void> {
  throw new Error("run steps stay partitioned: going back before 20261127020400 takes a restore from a backup");
}
