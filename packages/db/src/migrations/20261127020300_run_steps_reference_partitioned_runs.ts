import { type Kysely, sql } from "kysely";

/**
 * Validates the steps' foreign key to the partitioned runs: a scan of `run_steps` under a
 * SHARE UPDATE EXCLUSIVE lock (and ROW SHARE on runs), which lets reads and writes go on.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table run_steps validate constraint run_steps_run_id_fkey`.execute(db);
}

export async function down(): Promise<void> {}
