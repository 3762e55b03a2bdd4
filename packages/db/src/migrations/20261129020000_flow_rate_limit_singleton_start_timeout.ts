import { type Kysely, sql } from "kysely";

/**
 * Three flow controls (issue 31), each a setting of a flow and of every revision (null: none):
 * `rate_limit` ({limit, period_s, key?}: starts past the limit are skipped), `singleton`
 * ({key?, mode}: one queued or running run per key) and `start_timeout_s` (a run that waited
 * longer to start is cancelled). A run admitted under a rate limit keeps its key
 * (`rate_key`), counted by acceptance time (its id's, a UUIDv7) from a partial index of
 * admitted runs; a run admitted under a singleton keeps its key (`singleton_key`), and the
 * index of a key's live runs holds only queued and running ones, so it stays as small as the
 * runs under way.
 */
export async function up(db: Kysely<any>): Promise<void> {
  for (const table of ["flows", "flow_revisions"]) {
    await sql`
      alter table ${sql.table(table)} add column rate_limit jsonb, add column singleton jsonb,
        add column start_timeout_s integer`.execute(db);
  }
  await sql`alter table runs add column rate_key text, add column singleton_key text`.execute(db);
  await sql`create index runs_rate_limit on runs (flow_id, rate_key, id) where rate_key is not null`.execute(db);
  await sql`
    create index runs_singleton on runs (flow_id, singleton_key)
    where singleton_key is not null and status in ('queued', 'running')`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index runs_singleton`.execute(db);
  await sql`drop index runs_rate_limit`.execute(db);
  await sql`alter table runs drop column rate_key, drop column singleton_key`.execute(db);
  for (const table of ["flows", "flow_revisions"]) {
    await sql`
      alter table ${sql.table(table)} drop column rate_limit, drop column singleton,
        drop column start_timeout_s`.execute(db);
  }
}
