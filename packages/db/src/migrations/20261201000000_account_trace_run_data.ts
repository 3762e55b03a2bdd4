import { type Kysely, sql } from "kysely";

/**
 * Whether an account's runs show their data in their traces: the trigger on each `run` span
 * and each step's output on its `step` span (docs/guide/observability.md). Off unless the
 * account turns it on; a constant default, so adding it rewrites no row.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table accounts add column trace_run_data boolean not null default false`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table accounts drop column trace_run_data`.execute(db);
}
