import { type Kysely, sql } from "kysely";

/**
 * The runs holding a concurrency slot, apart from those waiting for one: taking a slot
 * counts the key's holders, which this index keeps to at most `limit` entries, where the
 * key's index of live runs also holds every waiting run (a backlog of a thousand made each
 * count read a thousand rows, under the key's lock). Its predicate names only columns the
 * other slot indexes name, so a run's writes stay as HOT as they were.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create index runs_slots_held on runs (flow_id, slot_key)
    where slot_key is not null and queue_reason is null`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index runs_slots_held`.execute(db);
}
