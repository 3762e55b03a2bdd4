/**
 * The run engine's throughput, in both modes (issue 8's target, scale-out: ≥ 8,000 one-step
 * `transform` runs and ≥ 2,000 one-step `js` runs completed per second), next to a trivial
 * `Bun.serve` driven by the same load generator in the same run. A three-step `transform` flow,
 * each step reading the one before, shows what every further step of a run costs; a
 * five-step flow of the flow language (expressions, an `if`, a 10-item `for_each`) what the
 * constructs cost (issue 18: the one-step flow must not pay for them); the one-step flow
 * limited to 50 runs at once (all the bench's runs share one key) what a concurrency slot
 * costs (issue 19), and limited to 1 run at once per key over 64 keys (the runs take the keys
 * in turn: `slot` of the trigger data) what one slot per key costs; issue 31's target for
 * both: at least half the rate of the flow without a limit. The flow controls that judge each start (issue 31) are measured on the
 * one-step flow where they admit every start, so that the row shows what judging costs: a
 * rate limit of 100,000 starts a second, above what the engine completes, a throttle of as
 * many starts a second, and a singleton keyed by a random number (one key per start). The controls that hold starts back are
 * measured where every start is run: a debounce keyed by a random number (each start runs
 * alone after its second of quiet, so its rates are bounded by `--window` runs a second) and
 * a flow-wide batch of 10 (each run completed takes ten starts, and `--window` counts starts).
 *
 *   bun bench/runs.ts [--seconds N] [--connections N] [--window N] [--modes embedded,scale-out]
 *                     [--flows transform,concurrency-limited,…] [--no-wait] [--partition-days N]
 *
 * `--partition-days 33` measures a scale-out deployment a month old (bench/lib/platform.ts):
 * the flow controls that read a key's runs read every day partition.
 *
 * `--flows` measures only the flows whose names contain one of the words given (the one-step
 * `transform` flow is always measured: the other rows are read against it); `--no-wait` leaves
 * out the wait-mode rows.
 *
 * Each flow phase starts runs with `POST /flows/{id}/runs` on `--connections` connections as
 * fast as the engine completes them: a connection waits while `--window` accepted runs have
 * not completed yet, so the queue stays bounded and the accept rate settles at the rate the
 * workers finish. Completions are read from the account's `runs.succeeded` and `runs.failed`
 * counters (POST /monitoring/metrics/current, polled every 50 ms; workers write them every
 * 200 ms). Printed: runs accepted/s over the phase, runs completed/s from the phase's start
 * until its last run completed, and p50/p99 of the runs' `duration_ms` (acceptance to end,
 * read back from GET /flows/{id}/runs). Wait mode (`?wait=true`, every request is a whole
 * run) is measured at 1 and `--connections` connections.
 *
 * The platform runs as real processes (bench/lib/platform.ts) with NODE_ENV=production;
 * scale-out runs when DATABASE_URL and REDIS_URL are set.
 */
import { loadavg } from "node:os";
import { flag, listFlag } from "./lib/args.ts";
import { inEveryMode } from "./lib/every-mode.ts";
import { callApi, modesFlag, type RunningPlatform, signUpForBench } from "./lib/platform.ts";
import { printTable } from "./lib/table.ts";

const SECONDS = flag("seconds", 10);
const CONNECTIONS = flag("connections", 64);
const WINDOW = flag("window", 1024);
const MODES = modesFlag();
const ONLY_FLOWS = listFlag("flows", []);
const WAIT_ROWS = !Bun.argv.includes("--no-wait");

/** Runs of the phase whose `duration_ms` is read back for the percentiles (the newest). */
const SAMPLE = 20_000;

/** Starts one run of the batched flow takes: its runs complete this many times slower than starts are accepted. */
const BATCH_ITEMS = 10;

const TRIGGER = JSON.stringify({ order: "A-1001", qty: 3, customer: { name: "Ada", tier: "gold" } });
/** The trigger data of each run a phase starts: TRIGGER, with `slot` counting through the per-key limited flow's 64 keys. */
let started = 0;
const nextTrigger = () => `${TRIGGER.slice(0, -1)},"slot":${started++ % 64}}`;
const FLOWS = {
  transform: {
    name: "bench transform",
    steps: [
      {
        name: "shape",
        subject: "transform",
        payload: { order: "{{trigger.order}}", qty: "{{trigger.qty}}", who: "{{trigger.customer.name}}" },
      },
    ],
  },
  "three-step transform": {
    name: "bench three steps",
    steps: [
      { name: "order", subject: "transform", payload: { order: "{{trigger}}", step: 1 } },
      {
        name: "priced",
        subject: "transform",
        payload: { before: "{{steps.order}}", total: "{{trigger.qty}}", step: 2 },
      },
      { name: "shipped", subject: "transform", payload: { before: "{{steps.priced}}", step: 3 } },
    ],
  },
  "five-step language": {
    name: "bench flow language",
    steps: [
      { name: "order", subject: "transform", payload: { order: "{{trigger.order}}", big: "{{trigger.qty > 2}}" } },
      {
        name: "vip",
        subject: "transform",
        if: "{{trigger.customer.tier = 'gold'}}",
        payload: { tier: "{{$uppercase(trigger.customer.tier)}}" },
      },
      {
        name: "lines",
        for_each: "{{[1..10]}}",
        steps: [{ name: "line", subject: "transform", payload: { n: "{{item}}", total: "{{item * 9.5}}" } }],
      },
      { name: "total", subject: "transform", payload: { sum: "{{$sum(steps.lines.total)}}" } },
      { name: "done", subject: "transform", payload: { order: "{{steps.order.order}}", sum: "{{steps.total.sum}}" } },
    ],
  },
  "concurrency-limited transform": {
    name: "bench concurrency",
    concurrency: { limit: 50, key: "{{trigger.customer.tier}}" },
    steps: [
      {
        name: "shape",
        subject: "transform",
        payload: { order: "{{trigger.order}}", qty: "{{trigger.qty}}", who: "{{trigger.customer.name}}" },
      },
    ],
  },
  "rate-limited transform": {
    name: "bench rate limit",
    rate_limit: { limit: 100_000, period_s: 1 },
    steps: [
      {
        name: "shape",
        subject: "transform",
        payload: { order: "{{trigger.order}}", qty: "{{trigger.qty}}", who: "{{trigger.customer.name}}" },
      },
    ],
  },
  "throttled transform": {
    name: "bench throttle",
    throttle: { limit: 100_000, period_s: 1 },
    steps: [
      {
        name: "shape",
        subject: "transform",
        payload: { order: "{{trigger.order}}", qty: "{{trigger.qty}}", who: "{{trigger.customer.name}}" },
      },
    ],
  },
  "singleton transform": {
    name: "bench singleton",
    singleton: { key: "{{$random()}}", mode: "skip" },
    steps: [
      {
        name: "shape",
        subject: "transform",
        payload: { order: "{{trigger.order}}", qty: "{{trigger.qty}}", who: "{{trigger.customer.name}}" },
      },
    ],
  },
  "debounced transform": {
    name: "bench debounce",
    debounce: { period_s: 1, key: "{{$random()}}" },
    steps: [
      {
        name: "shape",
        subject: "transform",
        payload: { order: "{{trigger.order}}", qty: "{{trigger.qty}}", who: "{{trigger.customer.name}}" },
      },
    ],
  },
  "batched transform": {
    name: "bench batch",
    batch: { max_items: BATCH_ITEMS, timeout_s: 1 },
    steps: [{ name: "count", subject: "transform", payload: { orders: "{{$count(trigger)}}" } }],
  },
  "64-key concurrency-limited transform": {
    name: "bench concurrency per key",
    concurrency: { limit: 1, key: "{{trigger.slot}}" },
    steps: [
      {
        name: "shape",
        subject: "transform",
        payload: { order: "{{trigger.order}}", qty: "{{trigger.qty}}", who: "{{trigger.customer.name}}" },
      },
    ],
  },
  js: {
    name: "bench js",
    steps: [
      {
        name: "total",
        subject: "js",
        payload: { code: "export default (input) => ({ order: input.trigger.order, total: input.trigger.qty * 9.5 })" },
      },
    ],
  },
};

interface Drive {
  /** Requests answered 2xx, per second. */
  rps: number;
  /** Request latency percentiles, ms. */
  p50: number;
  p99: number;
  ok: number;
  failures: number;
  /** When the first request went out and the last answer came back (performance.now()). */
  startedAt: number;
  endedAt: number;
}

const percentile = (sorted: number[], p: number) =>
  sorted.length === 0 ? Number.NaN : (sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? 0);

/**
 * The load generator: `connections` loops, each sending the request again as soon as the
 * previous one is answered, for `seconds`; `admit` (if any) is awaited before each request.
 */
async function drive(options: {
  url: string;
  init: RequestInit;
  connections: number;
  seconds: number;
  admit?: () => Promise<void> | undefined;
  /** Each request's body, when they differ. */
  body?: () => string;
}): Promise<Drive> {
  const latencies: number[] = [];
  let failures = 0;
  const startedAt = performance.now();
  const end = startedAt + options.seconds * 1000;
  const loop = async () => {
    while (performance.now() < end) {
      const admitted = options.admit?.();
      if (admitted !== undefined) await admitted;
      const sent = performance.now();
      try {
        const response = await fetch(
          options.url,
          options.body ? { ...options.init, body: options.body() } : options.init,
        );
        await response.arrayBuffer();
        if (response.ok) latencies.push(performance.now() - sent);
        else failures++;
      } catch {
        failures++;
      }
    }
  };
  await Promise.all(Array.from({ length: options.connections }, loop));
  const endedAt = performance.now();
  latencies.sort((a, b) => a - b);
  return {
    rps: latencies.length / ((endedAt - startedAt) / 1000),
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    ok: latencies.length,
    failures,
    startedAt,
    endedAt,
  };
}

/** Runs of the account that ended, from its counters (other processes' within their flush interval). */
async function endedRuns(platform: RunningPlatform, token: string): Promise<{ succeeded: number; failed: number }> {
  const { data } = await callApi(platform, token, "POST", "/monitoring/metrics/current", {
    metrics: ["runs.succeeded", "runs.failed"],
  });
  const value = (reading: { value?: number }) => reading.value ?? 0;
  return { succeeded: value(data[0]), failed: value(data[1]) };
}

/** Follows the account's ended-run count every 50 ms until stopped. */
function followEnded(platform: RunningPlatform, token: string, from: number) {
  let ended = 0;
  let failed = 0;
  let lastChangeAt = performance.now();
  let stopped = false;
  let changed: (() => void)[] = [];
  const polling = (async () => {
    const failedFrom = (await endedRuns(platform, token)).failed;
    while (!stopped) {
      const now = await endedRuns(platform, token);
      const total = now.succeeded + now.failed - from - failedFrom;
      if (total !== ended) {
        ended = total;
        failed = now.failed - failedFrom;
        lastChangeAt = performance.now();
        for (const wake of changed) wake();
        changed = [];
      }
      await Bun.sleep(50);
    }
  })();
  return {
    get ended() {
      return ended;
    },
    get failed() {
      return failed;
    },
    get lastChangeAt() {
      return lastChangeAt;
    },
    /** Resolves at the next change of the count. */
    change: () => new Promise<void>((resolve) => changed.push(resolve)),
    async stop() {
      stopped = true;
      await polling;
    },
  };
}

/** `duration_ms` of the flow's newest `count` succeeded runs, sorted. */
async function durations(platform: RunningPlatform, token: string, flowId: string, count: number): Promise<number[]> {
  const values: number[] = [];
  let cursor: string | null = null;
  while (values.length < count) {
    const query: string = `status=succeeded&limit=100${cursor ? `&cursor=${cursor}` : ""}`;
    const page: { data: { duration_ms: number }[]; next_cursor: string | null } = await callApi(
      platform,
      token,
      "GET",
      `/flows/${flowId}/runs?${query}`,
    );
    for (const run of page.data) values.push(run.duration_ms);
    cursor = page.next_cursor;
    if (!cursor) break;
  }
  return values.sort((a, b) => a - b);
}

interface FlowResult {
  accepted: number;
  acceptedPerSecond: number;
  completedPerSecond: number;
  failed: number;
  p50: number;
  p99: number;
}

/** Starts runs of a flow as fast as they complete (at most WINDOW outstanding), then waits for the last. */
async function measureFlow(
  platform: RunningPlatform,
  token: string,
  flowId: string,
  seconds: number,
  startsPerRun = 1,
) {
  const start = await endedRuns(platform, token);
  const ended = followEnded(platform, token, start.succeeded);
  let accepted = 0;
  const url = `${platform.url}/flows/${flowId}/runs`;
  const init: RequestInit = {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: TRIGGER,
  };
  const result = await drive({
    url,
    init,
    connections: CONNECTIONS,
    seconds,
    body: nextTrigger,
    admit: () => {
      accepted++;
      if (accepted - ended.ended * startsPerRun <= WINDOW) return undefined;
      return (async () => {
        while (accepted - ended.ended * startsPerRun > WINDOW) await ended.change();
      })();
    },
  });
  // Every accepted run completes (a stuck one fails the bench rather than its figures).
  const deadline = performance.now() + 120_000;
  while (ended.ended * startsPerRun < result.ok) {
    if (performance.now() > deadline) {
      throw new Error(`${result.ok - ended.ended * startsPerRun} starts were not run in 2 minutes`);
    }
    await Promise.race([ended.change(), Bun.sleep(500)]);
  }
  await ended.stop();
  const sorted = await durations(platform, token, flowId, Math.min(SAMPLE, Math.ceil(result.ok / startsPerRun)));
  return {
    accepted: result.ok,
    acceptedPerSecond: result.rps,
    completedPerSecond: ended.ended / ((ended.lastChangeAt - result.startedAt) / 1000),
    failed: ended.failed + result.failures,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
  } satisfies FlowResult;
}

async function measureWait(platform: RunningPlatform, token: string, flowId: string, connections: number) {
  return drive({
    url: `${platform.url}/flows/${flowId}/runs?wait=true`,
    init: {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: TRIGGER,
    },
    connections,
    seconds: SECONDS,
  });
}

const fixed = (value: number, digits = 0) => (Number.isFinite(value) ? value.toFixed(digits) : "-");

async function measureMode(platform: RunningPlatform, baselineUrl: string): Promise<void> {
  const { token } = await signUpForBench(platform.url);
  const flows: Record<string, string> = {};
  for (const [kind, definition] of Object.entries(FLOWS)) {
    const measured = kind === "transform" || ONLY_FLOWS.length === 0 || ONLY_FLOWS.some((word) => kind.includes(word));
    if (measured) flows[kind] = (await callApi(platform, token, "POST", "/flows", definition)).data.id;
  }
  // Warm up: revisions cached, connections open, the js sandbox's threads started.
  /** A batch run takes BATCH_ITEMS starts. */
  const startsPerRun = (kind: string) => (kind === "batched transform" ? BATCH_ITEMS : 1);
  for (const [kind, id] of Object.entries(flows)) await measureFlow(platform, token, id, 2, startsPerRun(kind));

  const rows: [string, FlowResult][] = [];
  for (const [kind, id] of Object.entries(flows)) {
    const result = await measureFlow(platform, token, id, SECONDS, startsPerRun(kind));
    rows.push([kind.includes("step") ? kind : `one-step ${kind}`, result]);
  }
  const waits: [string, Drive][] = [];
  for (const connections of WAIT_ROWS ? [1, CONNECTIONS] : []) {
    waits.push([
      `wait mode, transform, ${connections} conn.`,
      await measureWait(platform, token, flows.transform as string, connections),
    ]);
  }
  const init = { method: "POST", headers: { "content-type": "application/json" }, body: TRIGGER };
  const baseline = await drive({ url: baselineUrl, init, connections: CONNECTIONS, seconds: SECONDS });
  const baselineOne = await drive({ url: baselineUrl, init, connections: 1, seconds: SECONDS });

  console.log(
    `\n${platform.mode} mode: ${CONNECTIONS} connections, ${SECONDS} s per phase, at most ${WINDOW} runs outstanding; load average ${loadavg()
      .map((n) => n.toFixed(1))
      .join(" ")}`,
  );
  const drove = (name: string, d: Drive, accepted: string, completed: string, digits: number) => [
    name,
    accepted,
    completed,
    fixed(d.p50, digits),
    fixed(d.p99, digits),
    String(d.ok),
    String(d.failures),
  ];
  printTable(
    [
      ["what", 34],
      ["accepted/s", 11],
      ["completed/s", 12],
      ["p50 ms", 8],
      ["p99 ms", 8],
      ["runs", 8],
      ["failed", 7],
    ],
    [
      drove(`baseline: Bun.serve, ${CONNECTIONS} conn.`, baseline, fixed(baseline.rps), "", 1),
      ...rows.map(([name, r]) => [
        name,
        fixed(r.acceptedPerSecond),
        fixed(r.completedPerSecond),
        fixed(r.p50, 1),
        fixed(r.p99, 1),
        String(r.accepted),
        String(r.failed),
      ]),
      drove("baseline: Bun.serve, 1 conn.", baselineOne, fixed(baselineOne.rps), "", 2),
      ...waits.map(([name, r]) => drove(name, r, "", fixed(r.rps), 1)),
    ],
  );
}

await inEveryMode(MODES, measureMode);
