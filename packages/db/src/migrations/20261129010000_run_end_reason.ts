import { type Kysely, sql } from "kysely";

/**
 * Flow controls end some runs without running them (`skipped`, `batched`, or `cancelled`
 * waiting too long to start): `end_reason` says which control and why, as the API shows it,
 * and `taken_by` names the run that runs in its place (the later start that replaced it under
 * a debounce, the batch run that took its trigger). Both stay null for every other run.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table runs add column end_reason text, add column taken_by uuid`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table runs drop column end_reason, drop column taken_by`.execute(db);
}
