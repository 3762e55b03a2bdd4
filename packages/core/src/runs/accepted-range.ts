import { type Database, firstIdAt } from "@platform/db";
import type { SelectQueryBuilder } from "kysely";

/** How far apart a run id's time and its row's `created_at` may be (the process's and the database's clocks). */
const CLOCK_SLACK_MS = 1000;

/**
 * The ids of the runs accepted at or after `from` and before `to`, each bound null when not
 * given. Run ids are UUIDv7, made just before the run's row: a time range is an id range (a
 * second wider, for the clocks of the process and the database), which the primary key and
 * the `(flow_id, id)` index answer, then exact on `created_at`.
 */
export function acceptedIds(from?: Date, to?: Date): { fromId: string | null; toId: string | null } {
  return {
    fromId: from ? firstIdAt(from.getTime() - CLOCK_SLACK_MS) : null,
    toId: to ? firstIdAt(to.getTime() + CLOCK_SLACK_MS) : null,
  };
}

/** Keeps the runs accepted at or after `from` and before `to` (see `acceptedIds`). */
export function acceptedWithin<O>(
  query: SelectQueryBuilder<Database, "runs", O>,
  from?: Date,
  to?: Date,
): SelectQueryBuilder<Database, "runs", O> {
  const { fromId, toId } = acceptedIds(from, to);
  let within = query;
  if (from && fromId) within = within.where("runs.id", ">=", fromId).where("runs.created_at", ">=", from);
  if (to && toId) within = within.where("runs.id", "<", toId).where("runs.created_at", "<", to);
  return within;
}
