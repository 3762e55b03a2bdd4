import { type Kysely, sql } from "kysely";

/**
 * Flows may name steps to run once when a run fails (`on_failure`, for alerts). They are
 * part of the definition, so both the saved flow and each revision keep them; flows saved
 * before have none.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table flows add column on_failure jsonb not null default '[]'::jsonb`.execute(db);
  await sql`alter table flow_revisions add column on_failure jsonb not null default '[]'::jsonb`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table flows drop column on_failure`.execute(db);
  await sql`alter table flow_revisions drop column on_failure`.execute(db);
}
