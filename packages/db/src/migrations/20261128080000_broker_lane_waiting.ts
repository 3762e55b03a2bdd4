import { type Kysely, sql } from "kysely";

/**
 * A lane's row counts the entries waiting in it, kept by the statement that adds them and
 * the one that moves them. An admission reads the count from the row it locks, which is the
 * newest version even when an append committed while it waited for the lock, so one
 * statement can tell whether entries are left without a second look at the entries.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table broker_lanes add column waiting bigint not null default 0`.execute(db);
  await sql`
    update broker_lanes l set waiting = (
      select count(*) from broker_lane_entries e where e.scope = l.scope and e.stream = l.stream and e.lane = l.lane)`.execute(
    db,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table broker_lanes drop column waiting`.execute(db);
}
