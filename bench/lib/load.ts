import autocannon from "autocannon";
import { printTable } from "./table.ts";

export interface LoadOptions {
  url: string;
  /** More servers of the same deployment (several API processes): the connections are shared out over `url` and these. */
  alsoUrls?: string[];
  method?: "GET" | "POST" | "PUT" | "DELETE" | "PATCH";
  headers?: Record<string, string>;
  body?: string;
  /** A body per request (e.g. distinct keys); overrides `body`. */
  bodyOf?: (n: number) => string;
  /** A path (with query) per request (e.g. distinct searches), on `url`'s host. */
  pathOf?: (n: number) => string;
  /** Headers per request (e.g. a signature of `bodyOf(n)`), over `headers`. */
  headersOf?: (n: number) => Record<string, string>;
  /** Sees every response (status and body), e.g. to collect the ids a server answered. */
  onResponse?: (status: number, body: string) => void;
  connections: number;
  durationSeconds: number;
  /** Stops after this many requests instead of after `durationSeconds` (a finite set of prepared requests). */
  amount?: number;
}

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  /** Responses that were not 2xx, and connection errors. */
  failures: number;
}

/**
 * Runs autocannon against the URL (or, with `alsoUrls`, one autocannon per server, the
 * connections and any `amount` shared out, their figures added up: p50 and p99 are the
 * worst server's) and reads the figures the reports use.
 */
export async function load(options: LoadOptions): Promise<LoadResult> {
  const urls = [options.url, ...(options.alsoUrls ?? [])];
  if (urls.length === 1) return loadOne(options);
  // Server i of k sends requests i, i + k, i + 2k...: bodyOf, pathOf and headersOf see each n once, and agree on it.
  const spread = <T>(f: ((n: number) => T) | undefined, i: number) =>
    f ? (n: number) => f(n * urls.length + i) : undefined;
  const results = await Promise.all(
    urls.map((url, i) =>
      loadOne({
        ...options,
        url,
        alsoUrls: undefined,
        connections: Math.max(1, Math.round(options.connections / urls.length)),
        amount: options.amount === undefined ? undefined : Math.ceil(options.amount / urls.length),
        bodyOf: spread(options.bodyOf, i),
        pathOf: spread(options.pathOf, i),
        headersOf: spread(options.headersOf, i),
      }),
    ),
  );
  return {
    rps: results.reduce((sum, result) => sum + result.rps, 0),
    p50: Math.max(...results.map((result) => result.p50)),
    p99: Math.max(...results.map((result) => result.p99)),
    failures: results.reduce((sum, result) => sum + result.failures, 0),
  };
}

async function loadOne(options: LoadOptions): Promise<LoadResult> {
  let n = 0;
  const perRequest = options.bodyOf || options.pathOf || options.headersOf;
  // Requests are built once unless something differs per request (building each costs the load generator CPU).
  const setupRequest = (request: Record<string, unknown>) => {
    const at = n++;
    return {
      ...request,
      ...(options.bodyOf ? { body: options.bodyOf(at) } : {}),
      ...(options.pathOf ? { path: options.pathOf(at) } : {}),
      ...(options.headersOf
        ? { headers: { ...(request.headers as Record<string, string>), ...options.headersOf(at) } }
        : {}),
    };
  };
  const result = await autocannon({
    url: options.url,
    method: options.method ?? "GET",
    headers: options.headers,
    body: options.bodyOf ? undefined : options.body,
    connections: options.connections,
    duration: options.durationSeconds,
    amount: options.amount,
    requests:
      perRequest || options.onResponse
        ? [{ onResponse: options.onResponse, ...(perRequest ? { setupRequest } : {}) }]
        : undefined,
  });
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    failures: result.non2xx + result.errors,
  };
}

/** The value at `share` (0.5, 0.99) of latencies sorted ascending; 0 when there are none. */
export const percentile = (sorted: number[], share: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * share))] ?? 0;

export interface PacedOptions {
  url: string;
  method?: "GET" | "POST";
  headers?: Record<string, string>;
  body?: string;
  /** A path (with query) per request, on `url`'s host. */
  pathOf?: (n: number) => string;
  /** Requests sent a second. */
  rate: number;
  durationSeconds: number;
}

/**
 * Requests sent at a steady `rate` (open loop: each leaves on its schedule, answered or not
 * those before it), over Bun's kept-alive connections; each one's latency from its sending to
 * its whole answer read. What a request costs a server that keeps up with the rate, without
 * the queue a closed loop builds (`load`: each connection's next request waits for its last,
 * so a mean latency is connections / rate). autocannon's own rate limit does not do this: it
 * sends each second's quota at once, and fills in latencies for the pauses between.
 */
export async function paced(options: PacedOptions): Promise<LoadResult> {
  const latencies: number[] = [];
  let failures = 0;
  const inFlight = new Set<Promise<void>>();
  const send = (n: number) => {
    const url = options.pathOf ? new URL(options.pathOf(n), options.url).href : options.url;
    const sentAt = performance.now();
    const request = fetch(url, { method: options.method ?? "GET", headers: options.headers, body: options.body })
      .then(async (response) => {
        await response.arrayBuffer();
        if (response.ok) latencies.push(performance.now() - sentAt);
        else failures++;
      })
      .catch(() => {
        failures++;
      })
      .finally(() => inFlight.delete(request));
    inFlight.add(request);
  };
  const started = performance.now();
  const durationMs = options.durationSeconds * 1000;
  let sent = 0;
  for (let elapsed = 0; elapsed < durationMs; elapsed = performance.now() - started) {
    const due = Math.floor((elapsed * options.rate) / 1000);
    while (sent < due) send(sent++);
    await Bun.sleep(1);
  }
  await Promise.all(inFlight);
  latencies.sort((a, b) => a - b);
  return {
    rps: latencies.length / options.durationSeconds,
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    failures,
  };
}

/** Prints rows of figures with each one's ratio to the baseline measured in the same run. */
export function report(title: string, baseline: LoadResult, rows: [string, LoadResult][]): void {
  console.log(`\n${title}`);
  const cells = (name: string, r: LoadResult) => [
    name,
    Math.round(r.rps).toString(),
    r.p50.toFixed(1),
    r.p99.toFixed(1),
    `${((r.rps / baseline.rps) * 100).toFixed(1)}%`,
    String(r.failures),
  ];
  printTable(
    [
      ["what", 34],
      ["req/s", 9],
      ["p50 ms", 7],
      ["p99 ms", 7],
      ["vs baseline", 12],
      ["failed", 7],
    ],
    [cells("baseline: trivial Bun.serve", baseline), ...rows.map(([name, result]) => cells(name, result))],
  );
}
