import { type Kysely, sql } from "kysely";

/**
 * `lease_until`: until when the worker holding a run (`held_by`) is known to be alive. The
 * worker moves it ahead while it executes the run; once it has passed, the holder is taken
 * for dead. The recovery after Redis lost its data releases only runs whose lease is over
 * (packages/core/src/engine/recovery.ts). Not indexed: it is read by primary key, or by one
 * scan after such a loss, and an index would cost every claim its HOT update.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table runs add column lease_until timestamptz`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table runs drop column if exists lease_until`.execute(db);
}
