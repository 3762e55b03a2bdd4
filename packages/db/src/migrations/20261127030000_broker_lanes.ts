import { type Kysely, sql } from "kysely";

/**
 * Lanes of the PostgreSQL broker's streams (see `LanePort`): a row per lane with entries
 * waiting, holding its current turn, and the entries themselves, moved onto the stream (and
 * deleted here) as the lane's turns come. A lane's row goes when its last entry is moved; the
 * upsert that adds an entry and the admission that may delete the row lock it, so an entry is
 * never left in a lane without a turn on the stream.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table broker_lanes (
      scope text collate "C" not null,
      stream text collate "C" not null,
      lane text collate "C" not null,
      turn bigint not null,
      primary key (scope, stream, lane)
    )`.execute(db);
  await sql`
    create table broker_lane_entries (
      scope text collate "C" not null,
      stream text collate "C" not null,
      lane text collate "C" not null,
      id bigint generated always as identity,
      payload text not null,
      primary key (scope, stream, lane, id)
    )`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table broker_lane_entries`.execute(db);
  await sql`drop table broker_lanes`.execute(db);
}
