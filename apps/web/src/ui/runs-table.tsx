import { type RouterOutputs, RUN_STATUSES } from "@platform/client";
import { useInfiniteQuery, useQuery } from "@tanstack/react-query";
import { Link } from "@tanstack/react-router";
import { useVirtualizer } from "@tanstack/react-virtual";
import { useMemo, useRef } from "react";
import { api } from "../api/client.ts";
import { flowQueries, runQueries } from "../api/queries.ts";
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

/**
 * A flow's runs, newest first, live: the newest page is polled and merged over what is
 * shown (a batch per poll, however many runs arrived), older pages load as the list is
 * scrolled, and only the rows in view are rendered, so ten thousand rows stay light.
 * Status changes show for the newest page's runs; older rows show what they were loaded with.
 */
export function RunsTable({ flowId, filter }: { flowId?: string; filter: RunFilter }) {
  const input = { limit: PAGE, ...filter };
  // A flow's runs, or (no flow) the account's.
  const page = (cursor?: string) =>
    flowId ? api.runs.list.query({ id: flowId, ...input, cursor }) : api.runs.listAll.query({ ...input, cursor });
  const flows = useQuery({ ...flowQueries.list(), enabled: !flowId });
  const flowName = (id: string) => flows.data?.data.find((flow) => flow.id === id)?.name ?? id.slice(-12);
  // The newest run listed so far: a poll reads back to it.
  const newestSeen = useRef("");
  const head = useQuery({
    queryKey: [...runQueries.list(flowId, filter), "head"],
    queryFn: async () => {
      const first = await page();
      const runs = [...first.data];
      let cursor = first.next_cursor;
      // More than a page arrived since the last poll: follow the pages back to a run already
      // seen, so that none falls between the newest page and the older ones.
      for (
        let pages = 1;
        newestSeen.current && cursor && pages < MAX_CATCH_UP_PAGES && (runs.at(-1)?.id ?? "") > newestSeen.current;
        pages++
      ) {
        const next = await page(cursor);
        runs.push(...next.data);
        cursor = next.next_cursor;
      }
      return { data: runs, next_cursor: first.next_cursor };
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
  // a run pushed out of the newest page by newer ones stays listed.
  const seen = useRef(new Map<string, RunSummary>());
  const rows = useMemo(() => {
    const byId = seen.current;
    for (const page of older.data?.pages ?? []) for (const run of page.data) byId.set(run.id, run);
    for (const run of head.data?.data ?? []) byId.set(run.id, run);
    // Run ids are UUIDv7: their order is the order of acceptance.
    const sorted = [...byId.values()].sort((a, b) => (a.id < b.id ? 1 : -1));
    newestSeen.current = sorted[0]?.id ?? "";
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
