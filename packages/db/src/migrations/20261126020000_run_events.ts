import { type Kysely, sql } from "kysely";

/**
 * Runs that wait for people and for each other. `run_events` keeps the events sent to an
 * account by key (`POST /events`, an `event.send` step, the end of a run a `flow.call`
 * waits for); a waiting step takes the first event of its key sent after it began. A parked
 * run lists the keys it waits on in `waiting_on`, so that an event wakes exactly the runs
 * waiting for it, from an index. A run started by a `flow.call` names its parent and how
 * deep the calls go.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table run_events (
      id bigserial primary key,
      account_id text not null references accounts (id) on delete cascade,
      key text not null,
      data jsonb not null,
      created_at timestamptz not null default now()
    )`.execute(db);
  await sql`create index run_events_by_key on run_events (account_id, key, created_at)`.execute(db);
  await sql`alter table runs add column waiting_on text[]`.execute(db);
  await sql`create index runs_waiting_on on runs using gin (waiting_on) where waiting_on is not null`.execute(db);
  await sql`
    alter table runs
      add column parent_run_id uuid,
      add column call_depth integer not null default 0`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table runs drop column waiting_on, drop column parent_run_id, drop column call_depth`.execute(db);
  await sql`drop table run_events`.execute(db);
}
