import { isFinalRunStatus, type RunStatus } from "@platform/client";

/** What a run list needs of a run to follow it: its id (a UUIDv7: newer runs sort higher) and status. */
export interface ListedRun {
  id: string;
  status: RunStatus;
}

/** A page of a run list: runs older than the cursor, newest first, as `GET /runs` answers. */
export interface RunPage<Run extends ListedRun> {
  data: Run[];
  next_cursor: string | null;
}

/**
 * Reads again the rows of a live list that may have changed and that the newest page did
 * not just bring: the runs shown that had not ended, and are not in `fresh` (the ids the
 * poll just read). `rows` is the list as shown, newest first; `read(cursor)` answers the
 * runs older than `cursor` (any run id; none for the newest), whatever their status, so a
 * run that has left the list's status filter is read too. One read refreshes the live row
 * it starts at and every row down to the oldest run it brought; at most `maxReads` reads
 * are made, starting below `after` (the `resumeAfter` of the previous call), so a list
 * with more live rows than that goes through them all over a few calls.
 */
export async function refreshLiveRows<Run extends ListedRun>(
  rows: readonly Run[],
  fresh: ReadonlySet<string>,
  read: (cursor: string | undefined) => Promise<RunPage<Run>>,
  options: { maxReads: number; after: string },
): Promise<{ runs: Run[]; resumeAfter: string }> {
  const needsRead = (run: Run) => !fresh.has(run.id) && !isFinalRunStatus(run.status);
  const runs: Run[] = [];
  // Below `after` first; from the top again once the end was reached.
  let index = options.after ? rows.findIndex((run) => run.id < options.after) : 0;
  if (index < 0) index = 0;
  for (let reads = 0; reads < options.maxReads; reads++) {
    const at = rows.findIndex((run, i) => i >= index && needsRead(run));
    if (at < 0) return { runs, resumeAfter: "" };
    // The run just above is a cursor that makes this one the first of the page.
    const page = await read(at > 0 ? rows[at - 1]?.id : undefined);
    runs.push(...page.data);
    const oldest = page.data.at(-1)?.id;
    if (page.next_cursor === null || oldest === undefined) return { runs, resumeAfter: "" };
    const below = rows.findIndex((run) => run.id < oldest);
    if (below < 0) return { runs, resumeAfter: "" };
    index = Math.max(below, at + 1);
  }
  return { runs, resumeAfter: rows[index - 1]?.id ?? "" };
}
