import { type Kysely, sql } from "kysely";

/**
 * Schedule triggers: a flow with one keeps its next tick in `schedule_next_at` (null for
 * other triggers and inactive flows), so the scheduler finds the due ones from an index.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table flows add column schedule_next_at timestamptz`.execute(db);
  await sql`create index flows_schedule_due on flows (schedule_next_at) where schedule_next_at is not null`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table flows drop column schedule_next_at`.execute(db);
}
