import { type Kysely, sql } from "kysely";

/**
 * Runs of flows: one row per accepted trigger, written before its id is queued and
 * checkpointed by the worker after every step. Ids are UUIDv7, so their order is the order
 * of creation: listings page by id, and retention deletes by id range.
 *
 * - `steps`: per step name, its status, attempts (start, end, error), output and timings.
 * - `wake_at`: when a parked run (a `delay` step, a retry's backoff) is due to be queued again.
 * - `held_by`: the run-stream entry whose worker executes the run; another entry for the same
 *   run (a second wake-up) finds it held and leaves it alone.
 * - `waiter`: the API process waiting for the outcome (wait mode), told when the run ends.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table runs (
      id uuid primary key,
      account_id text not null references accounts (id) on delete cascade,
      flow_id uuid not null references flows (id) on delete cascade,
      revision integer not null,
      status text not null,
      trigger jsonb not null,
      steps jsonb not null default '{}'::jsonb,
      output jsonb,
      error text,
      response jsonb,
      replay_of uuid,
      delivery_id text,
      wake_at timestamptz,
      held_by text,
      waiter text,
      created_at timestamptz not null default now(),
      started_at timestamptz,
      finished_at timestamptz
    )`.execute(db);
  await sql`create index runs_flow_id on runs (flow_id, id)`.execute(db);
  await sql`create index runs_account_id on runs (account_id, id)`.execute(db);
  await sql`create index runs_wake_at on runs (wake_at) where wake_at is not null`.execute(db);
  await sql`create unique index runs_delivery on runs (flow_id, delivery_id) where delivery_id is not null`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table if exists runs`.execute(db);
}
