import { type Kysely, sql } from "kysely";

/**
 * Validates the bounds added by the previous migration: a scan of both tables under a SHARE
 * UPDATE EXCLUSIVE lock, which lets every read and write go on (it only keeps other schema
 * changes and vacuum waiting).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table runs validate constraint runs_partition_bound`.execute(db);
  await sql`alter table run_steps validate constraint run_steps_partition_bound`.execute(db);
}

export async function down(): Promise<void> {}
