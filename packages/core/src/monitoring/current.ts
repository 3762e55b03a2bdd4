import type { Services } from "../services.ts";
import { isCounter, metricDefinition } from "./catalog.ts";
import { runDurationPercentile } from "./durations.ts";

export type MetricReading = { ts: number; value: number } | { error: string };

const noData = { error: "no data" } as const;

/**
 * The current value of each named metric of an account, in the order asked: a counter's
 * total since the account was created, a run duration percentile over the last hour's ended
 * runs, or `{error}` for a name the platform does not know, a stream metric asked without
 * `stream`, or a percentile with no ended run to show.
 */
export async function readCurrentMetrics(
  services: Pick<Services, "metrics" | "db">,
  accountId: string,
  names: string[],
  stream: string | undefined,
): Promise<MetricReading[]> {
  const ts = Date.now();
  return Promise.all(
    names.map(async (name): Promise<MetricReading> => {
      const metric = metricDefinition(name);
      if (!metric) return noData;
      const needsStream = "needsStream" in metric && metric.needsStream;
      if (needsStream && stream === undefined) return { error: "stream is required" };
      if (!isCounter(metric.name)) {
        const fraction = metric.name === "runs.duration_ms.p50" ? 0.5 : 0.95;
        const value = await runDurationPercentile(services.db, accountId, fraction, ts);
        return value === null ? noData : { ts, value };
      }
      const value = await services.metrics.read(accountId, metric.name, needsStream ? stream : undefined);
      return { ts, value };
    }),
  );
}
