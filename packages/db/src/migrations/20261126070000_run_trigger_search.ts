import { type Kysely, sql } from "kysely";

/**
 * Run search by trigger data (`GET /flows/{id}/runs?where=&equals=`): a GIN index of each
 * run's trigger data with `jsonb_path_ops`, which keeps one hash per path to a value and
 * answers `trigger @> {...}` containment. Its writes go through GIN's pending list (fastupdate),
 * so a run's insert adds to a list that vacuum folds in, not to the tree itself.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`create index runs_trigger_search on runs using gin (trigger jsonb_path_ops)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index runs_trigger_search`.execute(db);
}
