import { type Database, firstIdAt } from "@platform/db";
import { type Kysely, sql } from "kysely";
import { requireLiveFlow } from "./live-flow.ts";

/** The windows a chart of runs covers, and the width of each of its bars. */
export const ACTIVITY_WINDOWS = {
  hour: { spanMs: 60 * 60_000, bucketMs: 60_000 },
  day: { spanMs: 24 * 60 * 60_000, bucketMs: 15 * 60_000 },
} as const;

export type ActivityWindow = keyof typeof ACTIVITY_WINDOWS;

export interface ActivityBucket {
  /** The bucket's start, ISO 8601. */
  at: string;
  accepted: number;
  succeeded: number;
  failed: number;
  /** Runs of flows a webhook starts, deliveries that started none (filtered, duplicate, rejected) included. */
  deliveries: number;
}

/**
 * The account's (or one flow's) runs accepted in the last hour or day, counted per bucket:
 * every bucket of the window, oldest first, empty ones as zeros. Read along the runs'
 * id (UUIDv7, so the window is an id range) of the account or the flow.
 */
export async function runActivity(
  db: Kysely<Database>,
  accountId: string,
  window: ActivityWindow,
  flowId: string | null,
  now = Date.now(),
): Promise<{ bucket_s: number; buckets: ActivityBucket[] }> {
  if (flowId !== null) await requireLiveFlow(db, accountId, flowId);
  const { spanMs, bucketMs } = ACTIVITY_WINDOWS[window];
  // Buckets are aligned to their width, so a chart drawn again a moment later keeps its bars.
  const end = Math.ceil(now / bucketMs) * bucketMs;
  const start = end - spanMs;
  const counted = await sql<{
    bucket: number;
    accepted: number;
    succeeded: number;
    failed: number;
    deliveries: number;
  }>`
    select floor((extract(epoch from r.created_at) * 1000 - ${start}) / ${bucketMs})::int as bucket,
      count(*)::int as accepted,
      (count(*) filter (where r.status = 'succeeded'))::int as succeeded,
      (count(*) filter (where r.status = 'failed'))::int as failed,
      (count(*) filter (where coalesce(f.trigger->>'type', 'webhook') = 'webhook'
        or r.status in ('filtered', 'duplicate', 'rejected')))::int as deliveries
    from runs r join flows f on f.id = r.flow_id
    where r.account_id = ${accountId}
      and r.id >= ${firstIdAt(start - 1000)} and r.created_at >= ${new Date(start)}
      and (${flowId}::uuid is null or r.flow_id = ${flowId}::uuid)
    group by 1`.execute(db);
  const byBucket = new Map(counted.rows.map((row) => [row.bucket, row]));
  const buckets: ActivityBucket[] = [];
  for (let index = 0; index < spanMs / bucketMs; index++) {
    const row = byBucket.get(index);
    buckets.push({
      at: new Date(start + index * bucketMs).toISOString(),
      accepted: row?.accepted ?? 0,
      succeeded: row?.succeeded ?? 0,
      failed: row?.failed ?? 0,
      deliveries: row?.deliveries ?? 0,
    });
  }
  return { bucket_s: bucketMs / 1000, buckets };
}
