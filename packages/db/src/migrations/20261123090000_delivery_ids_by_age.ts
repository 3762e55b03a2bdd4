import { type Kysely, sql } from "kysely";

/**
 * Delivery ids oldest first, for the job that forgets them once their flow's
 * de-duplication window is over (a repeat after that starts a run again).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`create index runs_delivery_age on runs (created_at) where delivery_id is not null`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index if exists runs_delivery_age`.execute(db);
}
