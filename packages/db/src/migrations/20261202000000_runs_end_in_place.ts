import { type Kysely, sql } from "kysely";

/**
 * A run's end rewrites its row where it lies (a HOT update): no new entry in any of the
 * table's indexes, among them the GIN index of its trigger data, which cost the database more
 * than the rest of the write. PostgreSQL updates a row in place only when no column an index
 * names changes (its predicate included) and the row's page has room for the new version:
 *
 * - the index of a singleton key's live runs named `status` in its predicate, which every end
 *   changes; it now holds every run that keeps a singleton key, and a run lets go of its key
 *   as it ends (as it does of its concurrency slot), so it still holds the runs under way.
 *   Runs that ended before this migration keep their key until retention drops them: the
 *   singleton's lookup reads `status` too, so they only take room in the index;
 * - the runs partitions leave part of each page free (a fillfactor of 70, as run-partitions.ts
 *   makes new days) for the new version of the rows they hold. The pages the existing
 *   partitions filled stay full; the pages they fill from now on keep the room.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`drop index runs_singleton`.execute(db);
  await sql`create index runs_singleton on runs (flow_id, singleton_key) where singleton_key is not null`.execute(db);
  const { rows } = await sql<{ name: string }>`
    select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
    where i.inhparent = 'runs'::regclass`.execute(db);
  for (const { name } of rows) {
    await sql`alter table ${sql.id(name)} set (fillfactor = 70)`.execute(db);
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  const { rows } = await sql<{ name: string }>`
    select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
    where i.inhparent = 'runs'::regclass`.execute(db);
  for (const { name } of rows) await sql`alter table ${sql.id(name)} reset (fillfactor)`.execute(db);
  await sql`drop index runs_singleton`.execute(db);
  await sql`
    create index runs_singleton on runs (flow_id, singleton_key)
    where singleton_key is not null and status in ('queued', 'running')`.execute(db);
}
