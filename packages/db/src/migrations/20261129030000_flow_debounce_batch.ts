import { type Kysely, sql } from "kysely";

/**
 * Debounce and batch (issue 31): a flow (and each revision) may debounce its starts per key or
 * gather them into batches per key. A run under a debounce keeps its key (`debounce_key`) and
 * when the quiet it waits for began (`debounce_since`, the acceptance of the first start it
 * replaced, which bounds the wait by `timeout_s`); a run holding a batch keeps its key
 * (`batch_key`), how many starts it holds (`batch_size`, itself included) and the bytes of
 * their trigger data (`batch_bytes`). The key's waiting run and open batch are read from
 * partial indexes of the runs that wait for them (`queue_reason` `debounce`, `batch`); the runs
 * a control ended in another's favour, from the index of `taken_by`.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table flows add column debounce jsonb, add column batch jsonb`.execute(db);
  await sql`alter table flow_revisions add column debounce jsonb, add column batch jsonb`.execute(db);
  await sql`
    alter table runs add column debounce_key text, add column debounce_since timestamptz,
      add column batch_key text, add column batch_size integer, add column batch_bytes bigint`.execute(db);
  await sql`create index runs_debounce_waiting on runs (flow_id, debounce_key) where queue_reason = 'debounce'`.execute(
    db,
  );
  await sql`create index runs_batch_open on runs (flow_id, batch_key) where queue_reason = 'batch'`.execute(db);
  await sql`create index runs_taken_by on runs (taken_by) where taken_by is not null`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index runs_taken_by`.execute(db);
  await sql`drop index runs_batch_open`.execute(db);
  await sql`drop index runs_debounce_waiting`.execute(db);
  await sql`
    alter table runs drop column debounce_key, drop column debounce_since,
      drop column batch_key, drop column batch_size, drop column batch_bytes`.execute(db);
  await sql`alter table flow_revisions drop column debounce, drop column batch`.execute(db);
  await sql`alter table flows drop column debounce, drop column batch`.execute(db);
}
