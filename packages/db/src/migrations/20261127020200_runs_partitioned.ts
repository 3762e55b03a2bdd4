import { type Kysely, sql } from "kysely";

/** The indexes of `runs`, re-made on the partitioned table under the same names. */
const RUN_INDEXES = {
  runs_account_id: sql`(account_id, id)`,
  runs_flow_id: sql`(flow_id, id)`,
  runs_replay_job: sql`(replay_job_id, id) where replay_job_id is not null`,
  runs_slots: sql`(flow_id, slot_key) where slot_key is not null`,
  runs_slots_held: sql`(flow_id, slot_key) where slot_key is not null and queue_reason is null`,
  runs_slots_waiting: sql`(flow_id, slot_key, id) where queue_reason is not null`,
  runs_throttle: sql`(flow_id, throttle_key, throttle_at) where throttle_at is not null`,
  runs_trigger_search: sql`using gin (trigger jsonb_path_ops)`,
  runs_waiting_on: sql`using gin (waiting_on) where waiting_on is not null`,
  runs_wake_at: sql`(wake_at) where wake_at is not null`,
};

/** The bound the first step proved for every row of `table` (see 20261127020000_runs_partition_bound). */
export async function provedBound(db: Kysely<any>, table: string, constraint: string): Promise<string> {
  const { rows } = await sql<{ definition: string }>`
    select pg_get_constraintdef(oid) as definition from pg_constraint
    where conrelid = ${table}::regclass and conname = ${constraint}`.execute(db);
  const bound = /'([0-9a-f-]{36})'/.exec(rows[0]?.definition ?? "")?.[1];
  if (!bound) throw new Error(`${table} has no constraint ${constraint}: run the migrations in order`);
  return bound;
}

/**
 * `runs` becomes a table partitioned by id (see packages/db/src/run-partitions.ts) whose
 * first partition, `runs_legacy`, is the table as it was, bounds MINVALUE to the proved
 * bound. Nothing is copied and nothing scanned: the old table is renamed and attached (its
 * CHECK constraint proves the bounds), and the partitioned table's indexes and foreign keys,
 * declared to match the old table's, adopt them instead of building their own. The steps'
 * foreign key now names the partitioned table; it is added NOT VALID and validated by the
 * next migration, under a lock that lets writes go on. Every statement here takes its lock
 * for well under a millisecond on a table of a million runs (bench/partition-migration.ts).
 */
export async function up(db: Kysely<any>): Promise<void> {
  const bound = sql.lit(await provedBound(db, "runs", "runs_partition_bound"));
  // Both tables change; steps are locked first, in the order a step's insert takes them
  // (run_steps, then runs for its foreign key), so that no writer holds one while waiting for the other.
  await sql`lock table run_steps, runs in access exclusive mode`.execute(db);
  await sql`alter table runs rename to runs_legacy`.execute(db);
  await sql`alter index runs_pkey rename to runs_legacy_pkey`.execute(db);
  for (const name of Object.keys(RUN_INDEXES)) {
    await sql`alter index ${sql.id(name)} rename to ${sql.id(name.replace(/^runs_/, "runs_legacy_"))}`.execute(db);
  }
  await sql`alter table run_steps drop constraint run_steps_run_id_fkey`.execute(db);
  await sql`create table runs (like runs_legacy including defaults) partition by range (id)`.execute(db);
  await sql`alter table runs add constraint runs_pkey primary key (id)`.execute(db);
  for (const [name, definition] of Object.entries(RUN_INDEXES)) {
    await sql`create index ${sql.id(name)} on runs ${definition}`.execute(db);
  }
  await sql`
    alter table runs add constraint runs_account_id_fkey
    foreign key (account_id) references accounts (id) on delete cascade`.execute(db);
  await sql`
    alter table runs add constraint runs_flow_id_fkey foreign key (flow_id) references flows (id) on delete cascade`.execute(
    db,
  );
  await sql`alter table runs attach partition runs_legacy for values from (minvalue) to (${bound})`.execute(db);
  await sql`
    alter table run_steps add constraint run_steps_run_id_fkey
    foreign key (run_id) references runs (id) on delete cascade not valid`.execute(db);
}

export async function down(): Promise<void> {
  throw new Error("runs stay partitioned: going back before 20261127020200 takes a restore from a backup");
}
