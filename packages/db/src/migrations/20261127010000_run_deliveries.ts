import { type Kysely, sql } from "kysely";

/**
 * The delivery ids that started runs move to a table of their own. A partitioned `runs`
 * (migration 20261127020200) can have no unique index that leaves out its partition key,
 * and a delivery id must be unique per flow whatever day its runs fall on. A run started by a
 * delivery (or a schedule's tick) claims `(flow_id, delivery_id)` here in the statement that
 * inserts it; the window job deletes the claims whose flow's window is over, oldest first.
 * `runs.delivery_id` stays as the run's record of what started it.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table run_deliveries (
      flow_id uuid not null references flows (id) on delete cascade,
      delivery_id text not null,
      run_id uuid not null,
      created_at timestamptz not null default now(),
      primary key (flow_id, delivery_id)
    )`.execute(db);
  await sql`
    insert into run_deliveries (flow_id, delivery_id, run_id, created_at)
    select flow_id, delivery_id, id, created_at from runs where delivery_id is not null`.execute(db);
  await sql`create index run_deliveries_age on run_deliveries (created_at)`.execute(db);
  await sql`drop index runs_delivery`.execute(db);
  await sql`drop index runs_delivery_age`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`update runs set delivery_id = null where delivery_id is not null and id not in (select run_id from run_deliveries)`.execute(
    db,
  );
  await sql`create unique index runs_delivery on runs (flow_id, delivery_id) where delivery_id is not null`.execute(db);
  await sql`create index runs_delivery_age on runs (created_at) where delivery_id is not null`.execute(db);
  await sql`drop table run_deliveries`.execute(db);
}
