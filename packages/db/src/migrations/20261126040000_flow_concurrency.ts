import { type Kysely, sql } from "kysely";

/**
 * Per-flow concurrency limits: a flow (and each revision) may say how many of its runs
 * execute at once, per key. A run taking a slot records its key (`slot_key`); one waiting
 * for a slot says why (`queue_reason`) and is found, oldest first, when a slot frees. Both
 * lookups read partial indexes, which hold live runs of limited flows only: a run's key is
 * cleared when it ends.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table flows add column concurrency jsonb`.execute(db);
  await sql`alter table flow_revisions add column concurrency jsonb`.execute(db);
  await sql`alter table runs add column slot_key text, add column queue_reason text`.execute(db);
  // Only columns a run's ordinary writes leave alone (not held_by): those writes stay HOT.
  await sql`create index runs_slots on runs (flow_id, slot_key) where slot_key is not null`.execute(db);
  await sql`create index runs_slots_waiting on runs (flow_id, slot_key, id) where queue_reason is not null`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table runs drop column slot_key, drop column queue_reason`.execute(db);
  await sql`alter table flow_revisions drop column concurrency`.execute(db);
  await sql`alter table flows drop column concurrency`.execute(db);
}
