import { type Kysely, sql } from "kysely";

/**
 * First step of partitioning runs and their steps by time without stopping their writes
 * (the next steps follow as migrations of their own, each in its own transaction, so that no
 * lock outlives its step). A partition's bounds must hold for every row it has: attaching
 * the existing table as the first partition would scan it under an ACCESS EXCLUSIVE lock,
 * unless a valid CHECK constraint already proves them. This adds that constraint, `id <`
 * midnight (UTC) a week from now, NOT VALID: a moment's lock, no scan. The next migration
 * validates it under a lock that lets reads and writes go on.
 *
 * The week is the margin for the runs accepted until the swap (seconds later, when the
 * migrations run through): a run accepted at or after the bound could not be inserted.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const day = new Date();
  day.setUTCHours(0, 0, 0, 0);
  const hex = (day.getTime() + 7 * 86_400_000).toString(16).padStart(12, "0");
  const bound = sql.lit(`${hex.slice(0, 8)}-${hex.slice(8, 12)}-7000-8000-000000000000`);
  // Steps first: a step's insert holds run_steps and then waits for runs (its foreign key);
  // locking in the other order would deadlock with it.
  await sql`
    alter table run_steps add constraint run_steps_partition_bound check (run_id < ${bound}::uuid) not valid`.execute(
    db,
  );
  await sql`alter table runs add constraint runs_partition_bound check (id < ${bound}::uuid) not valid`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table runs drop constraint if exists runs_partition_bound`.execute(db);
  await sql`alter table run_steps drop constraint if exists run_steps_partition_bound`.execute(db);
}
