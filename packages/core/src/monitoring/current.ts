import type { Services } from "../services.ts";
import { isCounter, metricDefinition } from "./catalog.ts";

export type MetricReading = { ts: number; value: number } | { error: string };

const noData = { error: "no data" } as const;

/**
 * The current value of each named metric of an account, in the order asked: a counter's
 * total since the account was created, or `{error}` for a name the platform does not
 * know, a stream metric asked without `stream`, or a metric with nothing to show yet.
 */
export async function readCurrentMetrics(
  services: Pick<Services, "metrics">,
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
      // Percentiles come with the run engine; until a run has ended there is nothing to show.
      if (!isCounter(metric.name)) return noData;
      const value = await services.metrics.read(accountId, metric.name, needsStream ? stream : undefined);
      return { ts, value };
    }),
  );
}
