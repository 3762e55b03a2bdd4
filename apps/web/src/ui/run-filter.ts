import { RUN_STATUSES, type RunStatus } from "@platform/client";
import { timeRangeOf } from "./time-range.ts";

/**
 * A run list's filter as the page's address holds it (`?status=failed&from=2026-11-27T09:00`),
 * so a filtered list can be linked to and comes back with the browser's Back: From and To as
 * typed, a wall-clock time in the person's own time zone.
 */
export interface RunFilterSearch {
  status?: RunStatus;
  from?: string;
  to?: string;
}

/** The filter an address holds, as far as it makes sense: an unknown status or an empty bound is no filter. */
export function runFilterSearch(search: Record<string, unknown>): RunFilterSearch {
  const status = RUN_STATUSES.find((known) => known === search.status);
  const text = (value: unknown) => (typeof value === "string" && value !== "" ? value : undefined);
  const from = text(search.from);
  const to = text(search.to);
  return { ...(status ? { status } : {}), ...(from ? { from } : {}), ...(to ? { to } : {}) };
}

/** What the API is asked for: the status, and the bounds as instants. */
export function runFilterOf(search: RunFilterSearch): { status?: RunStatus; from?: string; to?: string } {
  return { ...(search.status ? { status: search.status } : {}), ...timeRangeOf(search.from ?? "", search.to ?? "") };
}
