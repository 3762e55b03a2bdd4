import { describe, expect, test } from "bun:test";
import { activitySeriesOf, totalOf } from "./activity-series.ts";

const bucket = (at: string, accepted: number, succeeded: number, failed: number, deliveries: number) => ({
  at,
  accepted,
  succeeded,
  failed,
  deliveries,
});

describe("the Metrics page's chart and totals", () => {
  const buckets = [
    bucket("2026-11-26T07:00:00.000Z", 5, 3, 1, 4),
    bucket("2026-11-26T07:01:00.000Z", 0, 0, 0, 0),
    bucket("2026-11-26T07:02:00.000Z", 2, 1, 1, 7),
  ];

  test("each bucket is one point of each line, at its start, oldest first", () => {
    expect(activitySeriesOf(buckets)).toEqual({
      times: [1795676400, 1795676460, 1795676520],
      accepted: [5, 0, 2],
      succeeded: [3, 0, 1],
      failed: [1, 0, 1],
      deliveries: [4, 0, 7],
    });
  });

  test("the totals over the window add up every bucket, empty ones as nothing", () => {
    const series = activitySeriesOf(buckets);
    expect([series.accepted, series.succeeded, series.failed, series.deliveries].map(totalOf)).toEqual([7, 4, 2, 11]);
  });

  test("before the first answer the chart is empty and the totals are zero", () => {
    const series = activitySeriesOf([]);
    expect(series.times).toEqual([]);
    expect(totalOf(series.accepted)).toBe(0);
  });
});
