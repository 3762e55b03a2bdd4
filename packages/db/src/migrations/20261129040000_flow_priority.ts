import { type Kysely, sql } from "kysely";

/**
 * Priority (issue 31): a flow (and each revision) may give each of its runs a priority, in
 * seconds, by which it moves ahead of (or behind) the other runs waiting for a concurrency
 * slot of its key. A run waiting for a slot keeps its place (`slot_order`: its acceptance,
 * moved earlier by its priority); a key's queue is read, first place first, from a partial
 * index of the runs waiting for a slot, which replaces the index of waiting runs by id. The
 * runs waiting as this runs keep their place by their acceptance.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table flows add column priority jsonb`.execute(db);
  await sql`alter table flow_revisions add column priority jsonb`.execute(db);
  await sql`alter table runs add column slot_order timestamptz`.execute(db);
  await sql`update runs set slot_order = created_at where queue_reason = 'slot'`.execute(db);
  await sql`
    create index runs_slots_queue on runs (flow_id, slot_key, slot_order, id) where queue_reason = 'slot'`.execute(db);
  await sql`drop index runs_slots_waiting`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`create index runs_slots_waiting on runs (flow_id, slot_key, id) where queue_reason is not null`.execute(db);
  await sql`drop index runs_slots_queue`.execute(db);
  await sql`alter table runs drop column slot_order`.execute(db);
  await sql`alter table flow_revisions drop column priority`.execute(db);
  await sql`alter table flows drop column priority`.execute(db);
}
