import { type RouterOutputs, RUN_STATUSES } from "@platform/client";
import { useInfiniteQuery, useQuery } from "@tanstack/react-query";
import { Link } from "@tanstack/react-router";
import { useVirtualizer } from "@tanstack/react-virtual";
import { useMemo, useRef } from "react";
import { api } from "../api/client.ts";
import { flowQueries, runQueries } from "../api/queries.ts";
import { refreshLiveRows } from "./live-runs.ts";
import { problemOf } from "./problem.ts";
import { type RunFilterSearch, runFilterOf, runFilterSearch } from "./run-filter.ts";

type RunFilter = ReturnType<typeof runFilterOf>;

type RunSummary = RouterOutputs["runs"]["list"]["data"][number];

const PAGE = 100;
const ROW_HEIGHT = 36;
/** How often the newest page is asked for again: new runs and status changes arrive in one batch per poll. */
const LIVE_MS = 1000;
/** At most this many pages are read in one poll to catch up with runs that arrived since the last. */
const MAX_CATCH_UP_PAGES = 20;
/** At most this many pages are read in one poll to refresh runs under way below the newest page. */
const MAX_REFRESH_READS = 5;

/**
 * A flow's runs, newest first, live: the newest page is polled and merged over what is
 * shown (a batch per poll, however many runs arrived), older pages load as the list is
 * scrolled, and only the rows in view are rendered, so ten thousand rows stay light.
 * Each poll also reads again the rows below the newest page whose runs had not ended
 * (`refreshLiveRows`), so their status changes show too.
 */
export function RunsTable({ flowId, filter }: { flowId?: string; filter: RunFilter }) {
  const input = { limit: PAGE, ...filter };
  // A flow's runs, or (no flow) the account's.
  const page = (cursor?: string, query: RunFilter & { limit: number } = input) =>
    flowId ? api.runs.list.query({ id: flowId, ...query, cursor }) : api.runs.listAll.query({ ...query, cursor });
  // Rows are read again whatever their status now: one that has left a status filter shows where it went.
  const { status: _status, ...anyStatus } = input;
  const flows = useQuery({ ...flowQueries.list(), enabled: !flowId });
  const flowName = (id: string) => flows.data?.data.find((flow) => flow.id === id)?.name ?? id.slice(-12);
  // The rows as shown, newest first: a poll reads back to the newest, and again the ones under way.
  const shown = useRef<RunSummary[]>([]);
  // Where the last poll's refresh stopped, when there were more rows to read again than it could.
  const refreshedDownTo = useRef("");
  const head = useQuery({
    queryKey: [...runQueries.list(flowId, filter), "head"],
    queryFn: async () => {
      const first = await page();
      const runs = [...first.data];
      let cursor = first.next_cursor;
      // More than a page arrived since the last poll: follow the pages back to a run already
      // seen, so that none falls between the newest page and the older ones.
      const newestSeen = shown.current[0]?.id ?? "";
      for (
        let pages = 1;
        newestSeen && cursor && pages < MAX_CATCH_UP_PAGES && (runs.at(-1)?.id ?? "") > newestSeen;
        pages++
      ) {
        const next = await page(cursor);
        runs.push(...next.data);
        cursor = next.next_cursor;
      }
      const refreshed = await refreshLiveRows(
        shown.current,
        new Set(runs.map((run) => run.id)),
        (below) => page(below, anyStatus),
        { maxReads: MAX_REFRESH_READS, after: refreshedDownTo.current },
      );
      refreshedDownTo.current = refreshed.resumeAfter;
      return { data: runs, next_cursor: first.next_cursor, refreshed: refreshed.runs };
    },
    refetchInterval: LIVE_MS,
  });
  const older = useInfiniteQuery({
    queryKey: [...runQueries.list(flowId, filter), "older"],
    queryFn: ({ pageParam }) => page(pageParam),
    initialPageParam: head.data?.next_cursor ?? undefined,
    getNextPageParam: (page) => page.next_cursor ?? undefined,
    enabled: Boolean(head.data?.next_cursor),
  });

  // Every run seen since the list opened (the parent keys this component by flow and filter):
  // a run pushed out of the newest page by newer ones stays listed. Each answer is merged once,
  // when it arrives, so an older page read long ago never puts back a status since refreshed.
  const seen = useRef(new Map<string, RunSummary>());
  const merged = useRef(new WeakSet<object>());
  const rows = useMemo(() => {
    const byId = seen.current;
    const arrived = (answer: object) => {
      if (merged.current.has(answer)) return false;
      merged.current.add(answer);
      return true;
    };
    for (const page of older.data?.pages ?? []) {
      if (arrived(page)) for (const run of page.data) byId.set(run.id, run);
    }
    if (head.data && arrived(head.data)) {
      // A row read again is updated; the other runs of its pages are not this list's.
      for (const run of head.data.refreshed) if (byId.has(run.id)) byId.set(run.id, run);
      for (const run of head.data.data) byId.set(run.id, run);
    }
    // Run ids are UUIDv7: their order is the order of acceptance.
    const sorted = [...byId.values()].sort((a, b) => (a.id < b.id ? 1 : -1));
    shown.current = sorted;
    return sorted;
  }, [head.data, older.data]);

  const scroller = useRef<HTMLElement>(null);
  const virtual = useVirtualizer({
    count: rows.length,
    getScrollElement: () => scroller.current,
    estimateSize: () => ROW_HEIGHT,
    overscan: 10,
  });
  const items = virtual.getVirtualItems();
  const last = items[items.length - 1];
  if (last && last.index >= rows.length - 20 && older.hasNextPage && !older.isFetchingNextPage) {
    void older.fetchNextPage();
  }

  const error = head.error ?? older.error;
  const paddingTop = items[0]?.start ?? 0;
  const paddingBottom = virtual.getTotalSize() - (last?.end ?? 0);
  return (
    <div className="runs">
      {error && <div role="alert">{problemOf(error).message}</div>}
      {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling region must take focus to be scrolled by keyboard (axe: scrollable-region-focusable) */}
      <section ref={scroller} className="runs-scroll" tabIndex={0} aria-label="Runs">
        <table>
          <thead>
            <tr>
              <th scope="col">Run</th>
              {!flowId && <th scope="col">Flow</th>}
              <th scope="col">Status</th>
              <th scope="col">Accepted</th>
              <th scope="col">Duration</th>
            </tr>
          </thead>
          <tbody>
            {paddingTop > 0 && (
              <tr className="spacer" style={{ height: paddingTop }}>
                <td colSpan={flowId ? 4 : 5} />
              </tr>
            )}
            {items.map((item) => {
              const run = rows[item.index] as RunSummary;
              return (
                <tr key={run.id} className="run-row" data-status={run.status}>
                  <td>
                    <Link to="/console/runs/$runId" params={{ runId: run.id }}>
                      {run.id.slice(-12)}
                    </Link>
                  </td>
                  {!flowId && (
                    <td>
                      <Link to="/console/flows/$flowId" params={{ flowId: run.flow_id }}>
                        {flowName(run.flow_id)}
                      </Link>
                    </td>
                  )}
                  <td>
                    <span className={`status status-${run.status}`}>{run.status}</span>
                  </td>
                  <td>{new Date(run.created_at).toLocaleString()}</td>
                  <td>{run.duration_ms === null ? "…" : `${run.duration_ms} ms`}</td>
                </tr>
              );
            })}
            {paddingBottom > 0 && (
              <tr className="spacer" style={{ height: paddingBottom }}>
                <td colSpan={flowId ? 4 : 5} />
              </tr>
            )}
          </tbody>
        </table>
        {rows.length === 0 && head.data && <p className="empty">No runs yet.</p>}
      </section>
      <p className="runs-count" aria-live="polite">
        {rows.length} runs shown{older.hasNextPage ? ", scroll for older" : ""}
      </p>
    </div>
  );
}

/**
 * Status and time filters over a live run list. The filter lives in the page's address
 * (`search`): each change replaces it there (`onSearch`), and the list follows.
 */
export function FilteredRuns({
  flowId,
  search,
  onSearch,
}: {
  flowId?: string;
  search: RunFilterSearch;
  onSearch: (search: RunFilterSearch) => void;
}) {
  const change = (part: RunFilterSearch) => onSearch(runFilterSearch({ ...search, ...part }));
  const filter = runFilterOf(search);
  return (
    <>
      <div className="filters">
        <label>
          Status{" "}
          <select
            value={search.status ?? ""}
            onChange={(e) => change({ status: RUN_STATUSES.find((s) => s === e.target.value) })}
          >
            <option value="">any</option>
            {RUN_STATUSES.map((s) => (
              <option key={s}>{s}</option>
            ))}
          </select>
        </label>
        <label>
          From{" "}
          <input type="datetime-local" value={search.from ?? ""} onChange={(e) => change({ from: e.target.value })} />
        </label>
        <label>
          To <input type="datetime-local" value={search.to ?? ""} onChange={(e) => change({ to: e.target.value })} />
        </label>
      </div>
      {/* A new filter is a new list: what was seen under the old one is not kept. */}
      <RunsTable key={JSON.stringify(filter)} flowId={flowId} filter={filter} />
    </>
  );
}
