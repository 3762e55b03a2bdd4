import { type Kysely, sql } from "kysely";

/**
 * Bulk replays: a job replays a flow's runs that match a filter, a window at a time. The
 * runs it started name it (`replay_job_id`), so that it can count those still under way,
 * reading only its replays from the oldest that was under way at its last look.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table replay_jobs (
      id uuid primary key,
      account_id text not null references accounts (id) on delete cascade,
      flow_id uuid not null references flows (id) on delete cascade,
      status text not null default 'running',
      filter jsonb not null,
      -- Runs accepted from this id on (the job's own replays among them) are never matched.
      before_id uuid not null,
      -- The last run replayed: the job goes on after it, in id order.
      cursor uuid,
      -- Its replays from this one on may be under way still (those before it have ended).
      underway_from uuid,
      matched integer not null,
      started integer not null default 0,
      created_at timestamptz not null default now(),
      finished_at timestamptz
    )`.execute(db);
  await sql`create index replay_jobs_running on replay_jobs (id) where status = 'running'`.execute(db);
  await sql`alter table runs add column replay_job_id uuid`.execute(db);
  // No status in it (nor in its predicate): a run's status changes stay HOT updates.
  await sql`create index runs_replay_job on runs (replay_job_id, id) where replay_job_id is not null`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table runs drop column replay_job_id`.execute(db);
  await sql`drop table replay_jobs`.execute(db);
}
