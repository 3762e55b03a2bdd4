import { type Kysely, sql } from "kysely";

/**
 * A schedule's shortest interval between ticks, in seconds, measured when the flow is saved
 * (null for other triggers, and for schedules saved before this column until their next
 * save): `GET /accounts/usage` shows the account's shortest against its plan's
 * `schedule_interval_seconds` without reading every schedule's ticks again.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table flows add column schedule_interval_s integer`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table flows drop column schedule_interval_s`.execute(db);
}
