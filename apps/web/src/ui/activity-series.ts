import type { api } from "../api/client.ts";

/** One bucket of `GET /runs/activity`: runs accepted in it, by how they ended, and webhook deliveries. */
export type ActivityBucket = Awaited<ReturnType<typeof api.runs.activity.query>>["data"]["buckets"][number];

/** The chart's lines: one value a bucket in each, in the order of `times`. */
export interface ActivitySeries {
  /** Bucket starts, Unix seconds. */
  times: number[];
  accepted: number[];
  succeeded: number[];
  failed: number[];
  deliveries: number[];
}

/** The buckets of a window, oldest first, as the chart's lines. */
export function activitySeriesOf(buckets: ActivityBucket[]): ActivitySeries {
  return {
    times: buckets.map((b) => Date.parse(b.at) / 1000),
    accepted: buckets.map((b) => b.accepted),
    succeeded: buckets.map((b) => b.succeeded),
    failed: buckets.map((b) => b.failed),
    deliveries: buckets.map((b) => b.deliveries),
  };
}

/** A line's total over the window: what the totals table shows. */
export const totalOf = (values: number[]) => values.reduce((total, value) => total + value, 0);
