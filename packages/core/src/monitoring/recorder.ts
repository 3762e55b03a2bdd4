import { type Broker, PLATFORM_SCOPE } from "../broker/port.ts";
import type { Logger } from "../logger.ts";

/** Per-account counters the platform increments as things happen. */
export type CounterMetric =
  | "webhooks.received"
  | "webhooks.rejected"
  | "runs.started"
  | "runs.succeeded"
  | "runs.failed"
  | "schedules.refused"
  | "gateway.requests"
  | "kv.keys";

/** Per-stream counters: they need the stream's name, read back with `stream` in the metrics request. */
export type StreamMetric = "stream.messages" | "stream.bytes";

export type RecordedMetric = CounterMetric | StreamMetric;

/** The broker counter holding a metric of an account (in the account's scope). */
export function metricCounterName(metric: RecordedMetric, stream?: string): string {
  return stream === undefined ? `metrics:${metric}` : `metrics:${metric}:${stream}`;
}

/** A run that ended, in its account's and the platform's `runs.succeeded` or `runs.failed`. */
export function countRunEnd(metrics: MetricsRecorder, accountId: string, status: "succeeded" | "failed"): void {
  const metric = status === "succeeded" ? "runs.succeeded" : "runs.failed";
  metrics.count(accountId, metric);
  metrics.count(PLATFORM_SCOPE, metric);
}

/**
 * Counts what happens in an account (`runs.started`, `stream.bytes`, ...) through the
 * Broker, so every process adds to the same totals. Calls return at once: increments are
 * summed in memory and written every `flushMs` (one broker call per counter touched),
 * which keeps counting off the hot paths of webhooks and runs. A process sees its own
 * increments at once (`read` adds what it has not written yet); other processes' within
 * `flushMs`.
 */
export interface MetricsRecorder {
  /** Adds `by` (default 1; negative to take away) to an account's counter. */
  count(accountId: string, metric: CounterMetric, by?: number): void;
  /** The same for a counter of one stream of the account. */
  countStream(accountId: string, metric: StreamMetric, stream: string, by?: number): void;
  /** A counter's current total, this process's increments included (it flushes first). */
  read(accountId: string, metric: RecordedMetric, stream?: string): Promise<number>;
  /** Writes every pending increment now. */
  flush(): Promise<void>;
  /** Stops the timer after a last flush. */
  close(): Promise<void>;
}

export interface MetricsRecorderOptions {
  broker: Broker;
  logger: Logger;
  /** How often pending increments are written (default 200 ms). */
  flushMs?: number;
}

/** Pending increments per account, then per broker counter name. */
type Pending = Map<string, Map<string, number>>;

export function createMetricsRecorder({ broker, logger, flushMs = 200 }: MetricsRecorderOptions): MetricsRecorder {
  let pending: Pending = new Map();
  let flushing: Promise<void> = Promise.resolve();
  let failures = 0;

  function add(accountId: string, counter: string, by: number): void {
    if (by === 0) return;
    let account = pending.get(accountId);
    if (!account) {
      account = new Map();
      pending.set(accountId, account);
    }
    account.set(counter, (account.get(counter) ?? 0) + by);
  }

  async function writeOut(): Promise<void> {
    if (pending.size === 0) return;
    const batch = pending;
    pending = new Map();
    const writes: Promise<unknown>[] = [];
    for (const [accountId, counters] of batch) {
      for (const [counter, by] of counters) {
        if (by === 0) continue;
        writes.push(
          broker.increment(accountId, counter, by).catch((error: unknown) => {
            // Kept for the next flush: a broker outage delays counts, it does not lose them.
            add(accountId, counter, by);
            throw error;
          }),
        );
      }
    }
    const results = await Promise.allSettled(writes);
    const rejected = results.filter((result): result is PromiseRejectedResult => result.status === "rejected");
    if (rejected.length === 0) {
      failures = 0;
    } else if (failures++ % 50 === 0) {
      logger.warn({ failed: rejected.length, err: String(rejected[0]?.reason) }, "metrics not written; will retry");
    }
  }

  /** Flushes one after another, so that a slow write never overlaps the next. */
  function flush(): Promise<void> {
    flushing = flushing.then(writeOut);
    return flushing;
  }

  const timer = setInterval(() => void flush(), flushMs);
  timer.unref?.();

  return {
    count(accountId, metric, by = 1) {
      add(accountId, metricCounterName(metric), by);
    },
    countStream(accountId, metric, stream, by = 1) {
      add(accountId, metricCounterName(metric, stream), by);
    },
    async read(accountId, metric, stream) {
      // Writing first means nothing is half-way between this process and the broker.
      await flush();
      const counter = metricCounterName(metric, stream);
      const stored = await broker.counter(accountId, counter);
      return stored + (pending.get(accountId)?.get(counter) ?? 0);
    },
    flush,
    async close() {
      clearInterval(timer);
      await flush();
    },
  };
}
