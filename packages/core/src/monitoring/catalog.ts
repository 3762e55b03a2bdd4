import type { RecordedMetric } from "./recorder.ts";

/** The metrics an account can read, in the order `GET /monitoring/metrics` lists them. */
export const METRIC_CATALOG = [
  { name: "webhooks.received", description: "Webhook deliveries received (accepted, filtered or duplicate)." },
  { name: "webhooks.rejected", description: "Webhook deliveries refused: bad signature or API key." },
  { name: "runs.started", description: "Flow runs started." },
  { name: "runs.succeeded", description: "Flow runs that succeeded." },
  { name: "runs.failed", description: "Flow runs that failed." },
  {
    name: "runs.duration_ms.p50",
    description: "Median duration, accept to end in milliseconds, of the runs accepted in the last hour that ended.",
  },
  { name: "runs.duration_ms.p95", description: "95th percentile of that duration, over the same runs." },
  {
    name: "schedules.refused",
    description:
      "Schedule ticks that started no run: the account had started as many runs as its plan's runs_per_minute allows.",
  },
  { name: "gateway.requests", description: "Requests served by the account's gateways." },
  { name: "stream.messages", description: "Messages published to the stream named by `stream`.", needsStream: true },
  { name: "stream.bytes", description: "Bytes of message bodies published to `stream`.", needsStream: true },
  { name: "kv.keys", description: "Keys held in the account's key-value buckets." },
] as const satisfies readonly { name: string; description: string; needsStream?: boolean }[];

export type MetricName = (typeof METRIC_CATALOG)[number]["name"];

const byName = new Map<string, (typeof METRIC_CATALOG)[number]>(METRIC_CATALOG.map((metric) => [metric.name, metric]));

/** The catalog entry of a name, or undefined for a name the platform does not know. */
export function metricDefinition(name: string) {
  return byName.get(name);
}

/** Metrics whose value is a counter the recorder keeps (the rest are computed, e.g. percentiles). */
export function isCounter(name: MetricName): name is RecordedMetric {
  return !name.startsWith("runs.duration_ms.");
}
