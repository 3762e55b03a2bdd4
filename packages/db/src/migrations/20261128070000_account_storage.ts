import { type Kysely, sql } from "kysely";

/**
 * What an account keeps in the database, counted as it changes, so that its plan's limits
 * are checked without summing tables: `account_storage` holds the bytes of its events
 * (`event_bytes`) and of its flows' revisions (`flow_revision_bytes`), moved by the
 * statement that writes or deletes them. An event keeps the bytes it counted for
 * (`run_events.bytes`), so that retention gives back what the write took; revisions are
 * kept for good and never give any back. A run notes what it recorded (`runs.recorded_bytes`:
 * its steps' outputs and error texts), against the bytes its plan lets one run record.
 *
 * What is there already counts as the text of its JSON (`octet_length`): events and
 * revisions here. Runs under way count from now on: reading every run's steps would hold
 * the runs' lock for as long.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table account_storage (
      account_id text primary key references accounts (id) on delete cascade,
      event_bytes bigint not null default 0,
      flow_revision_bytes bigint not null default 0
    )`.execute(db);
  await sql`alter table run_events add column bytes integer not null default 0`.execute(db);
  await sql`update run_events set bytes = octet_length(key) + octet_length(data::text)`.execute(db);
  await sql`
    insert into account_storage (account_id, event_bytes, flow_revision_bytes)
    select account_id, sum(events), sum(revisions) from (
      select account_id, bytes as events, 0 as revisions from run_events
      union all
      select f.account_id, 0, octet_length(r.trigger::text) + octet_length(r.steps::text)
        + octet_length(r.on_failure::text) + coalesce(octet_length(r.concurrency::text), 0)
        + coalesce(octet_length(r.throttle::text), 0)
      from flow_revisions as r join flows as f on f.id = r.flow_id
    ) as kept
    group by account_id`.execute(db);
  await sql`alter table runs add column recorded_bytes bigint not null default 0`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table runs drop column recorded_bytes`.execute(db);
  await sql`alter table run_events drop column bytes`.execute(db);
  await sql`drop table account_storage`.execute(db);
}
