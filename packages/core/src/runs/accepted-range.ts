import { type Database, firstIdAt } from "@platform/db";
import type { SelectQueryBuilder } from "kysely";

/** How far apart a run id's time and its row's `created_at` may be (the process's and the database's clocks). */
const CLOCK_SLACK_MS = 1000;

/**
 * Keeps the runs accepted at or after `from` and before `to`. Run ids are UUIDv7, made just
 * before the run's row: a time range is an id range (a second wider, for the clocks of the
 * process and the database), which the primary key and the `(flow_id, id)` index answer,
 * then exact on `created_at`.
 */
export function acceptedWithin<O>(
  query: SelectQueryBuilder<Database, "runs", O>,
  from?: Date,
  to?: Date,
): SelectQueryBuilder<Database, "runs", O> {
  let within = query;
  if (from) {
    within = within
      .where("runs.id", ">=", firstIdAt(from.getTime() - CLOCK_SLACK_MS))
      .where("runs.created_at", ">=", from);
  }
  if (to) {
    within = within.where("runs.id", "<", firstIdAt(to.getTime() + CLOCK_SLACK_MS)).where("runs.created_at", "<", to);
  }
  return within;
}
