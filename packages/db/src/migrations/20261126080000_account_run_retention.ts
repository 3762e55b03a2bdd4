import { type Kysely, sql } from "kysely";

/** An account may keep its runs for less than the deployment's RUN_RETENTION_DAYS (null: that). */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table accounts add column run_retention_days integer`.execute(db);
  await sql`create index accounts_run_retention on accounts (id) where run_retention_days is not null`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table accounts drop column run_retention_days`.execute(db);
}
