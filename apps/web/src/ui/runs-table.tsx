import { useInfiniteQuery, useQuery } from "@tanstack/react-query";
import { Link } from "@tanstack/react-router";
import { useVirtualizer } from "@tanstack/react-virtual";
import { useMemo, useRef } from "react";
import { api } from "../api/client.ts";
import { problemOf } from "./problem.ts";

export const RUN_STATUSES = [
  "queued",
  "running",
  "succeeded",
  "failed",
  "cancelled",
  "filtered",
  "duplicate",
  "rejected",
] as const;

export interface RunFilter {
  status?: (typeof RUN_STATUSES)[number];
  from?: string;
  to?: string;
}

type RunSummary = Awaited<ReturnType<typeof api.runs.list.query>>["data"][number];

const PAGE = 100;
const ROW_HEIGHT = 36;
/** How often the newest page is asked for again: new runs and status changes arrive in one batch per poll. */
const LIVE_MS = 1000;

/**
 * A flow's runs, newest first, live: the newest page is polled and merged over what is
 * shown (a batch per poll, however many runs arrived), older pages load as the list is
 * scrolled, and only the rows in view are rendered, so ten thousand rows stay light.
 * Status changes show for the newest page's runs; older rows show what they were loaded with.
 */
export function RunsTable({ flowId, filter }: { flowId: string; filter: RunFilter }) {
  const input = { id: flowId, limit: PAGE, ...filter };
  const head = useQuery({
    queryKey: ["runs", flowId, filter, "head"],
    queryFn: () => api.runs.list.query(input),
    refetchInterval: LIVE_MS,
  });
  const older = useInfiniteQuery({
    queryKey: ["runs", flowId, filter, "older"],
    queryFn: ({ pageParam }) => api.runs.list.query({ ...input, cursor: pageParam }),
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
    return [...byId.values()].sort((a, b) => (a.id < b.id ? 1 : -1));
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
              <th scope="col">Status</th>
              <th scope="col">Accepted</th>
              <th scope="col">Duration</th>
            </tr>
          </thead>
          <tbody>
            {paddingTop > 0 && (
              <tr className="spacer" style={{ height: paddingTop }}>
                <td colSpan={4} />
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
                <td colSpan={4} />
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
