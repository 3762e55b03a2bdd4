/**
 * The run's hot path, side by side over source trees (issue 34): this checkout and others
 * (`git worktree add /tmp/before <commit>`, then `bun install` there), each started by its
 * own `bench/lib/platform.ts`, rounds alternating the trees, next to a trivial `Bun.serve`
 * loaded the same way in every round (this machine's speed moves from day to day and within
 * a run; compare ratios).
 *
 *   bun bench/trees.ts --trees /tmp/before,. [--modes scale-out,embedded] [--rounds 2] [--seconds 5]
 *
 * Per tree and mode, a one-step `transform` flow started in wait mode
 * (`POST /flows/{id}/runs?wait=true`, every request a whole run):
 * - `lone`: one request at a time, p50/p99 (a lone run's latency end to end);
 * - `64 conns`: 64 at a time, runs/s and p99, with the CPU every platform process spent
 *   per run (API + worker, µs), read from /proc;
 * and started without waiting (`POST /flows/{id}/runs`, the queue path every run that reaches
 * out takes): `--queued` runs (default 10,000) on 64 connections, after as many to warm the
 * queue path up, completed/s from the first
 * start to the last end (read from the account's `runs.succeeded` counter), and the CPU per
 * run of the platform's processes and, in scale-out, of PostgreSQL and Redis (every
 * `postgres` and `redis-server` process of the machine).
 */
import { resolve } from "node:path";
import { flag, listFlag } from "./lib/args.ts";
import { cpuNow, cpuSpent, serverCpuSeconds } from "./lib/cpu.ts";
import { type LoadResult, load, percentile } from "./lib/load.ts";
import { availableModes, type Mode, type RunningPlatform, startBaseline } from "./lib/platform.ts";
import { printTable } from "./lib/table.ts";

const TREES = listFlag("trees", ["."]).map((tree) => resolve(tree));
const MODES = listFlag("modes", availableModes()) as Mode[];
const ROUNDS = flag("rounds", 2);
const SECONDS = flag("seconds", 5);
const QUEUED = flag("queued", 10_000);

const FLOW = {
  name: "bench transform",
  steps: [
    {
      name: "shape",
      subject: "transform",
      payload: { order: "{{trigger.order}}", qty: "{{trigger.qty}}", who: "{{trigger.customer.name}}" },
    },
  ],
};
const TRIGGER = JSON.stringify({ order: "A-1001", qty: 3, customer: { name: "Ada", tier: "gold" } });

interface TreePlatform {
  startPlatform(mode: Mode): Promise<RunningPlatform>;
  signUpForBench(url: string): Promise<{ token: string }>;
}

interface Row {
  lone: { p50: number; p99: number };
  loaded: LoadResult;
  cpuPerRun: Record<string, number>;
  queued: { completedPerSecond: number; cpuPerRun: Record<string, number> };
}

/** Runs of the account that ended, from its counters (workers write them every 200 ms). */
async function endedRuns(url: string, token: string): Promise<number> {
  const response = await fetch(`${url}/monitoring/metrics/current`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ metrics: ["runs.succeeded", "runs.failed"] }),
  });
  const { data } = (await response.json()) as { data: { value?: number }[] };
  return data.reduce((sum, reading) => sum + (reading.value ?? 0), 0);
}

/** CPU seconds so far of the platform's processes and of the servers named (`postgres`, `redis-server`). */
function cpuReading(pids: Record<string, number>, servers: string[]) {
  return {
    own: cpuNow(pids),
    servers: Object.fromEntries(servers.map((name) => [name, serverCpuSeconds(name)])),
  };
}

/** µs per run each process (and server) spent since `before`. */
function cpuPerRunSince(pids: Record<string, number>, before: ReturnType<typeof cpuReading>, runs: number) {
  const spent: Record<string, number> = { ...cpuSpent(pids, before.own) };
  for (const [name, seconds] of Object.entries(before.servers)) spent[name] = serverCpuSeconds(name) - seconds;
  return Object.fromEntries(Object.entries(spent).map(([role, s]) => [role, (s * 1e6) / runs]));
}

/**
 * `amount` runs started without waiting, on 64 connections, timed until the last one ended:
 * ended/s and CPU µs per run.
 */
async function queuedPhase(
  platform: RunningPlatform,
  mode: Mode,
  token: string,
  flowId: string,
  amount: number,
): Promise<Row["queued"]> {
  const endedBefore = await endedRuns(platform.url, token);
  const before = cpuReading(platform.pids, mode === "scale-out" ? ["postgres", "redis-server"] : []);
  const startedAt = performance.now();
  // Followed while the runs are started, since the load generator ends on a whole second.
  let accepted = amount;
  let endedAt = 0;
  const following = (async () => {
    const deadline = startedAt + 180_000;
    while ((await endedRuns(platform.url, token)) - endedBefore < accepted) {
      if (performance.now() > deadline) throw new Error(`${accepted} runs accepted did not all end within 3 minutes`);
      await Bun.sleep(10);
    }
    endedAt = performance.now();
  })();
  const loaded = await load({
    url: `${platform.url}/flows/${flowId}/runs`,
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: TRIGGER,
    connections: 64,
    durationSeconds: 600,
    amount,
  });
  accepted = amount - loaded.failures;
  await following;
  const seconds = (endedAt - startedAt) / 1000;
  return { completedPerSecond: accepted / seconds, cpuPerRun: cpuPerRunSince(platform.pids, before, accepted) };
}

/** `QUEUED` runs queued, after as many to warm the queue path up (a tree that runs wait-mode starts in place left its worker idle). */
async function measureQueued(
  platform: RunningPlatform,
  mode: Mode,
  token: string,
  flowId: string,
): Promise<Row["queued"]> {
  await queuedPhase(platform, mode, token, flowId, QUEUED);
  return queuedPhase(platform, mode, token, flowId, QUEUED);
}

async function measureTree(tree: string, mode: Mode): Promise<Row> {
  // Each tree starts its own platform, from its own code.
  const { startPlatform, signUpForBench } = (await import(`${tree}/bench/lib/platform.ts`)) as TreePlatform;
  const platform = await startPlatform(mode);
  try {
    const { token } = await signUpForBench(platform.url);
    const created = await fetch(`${platform.url}/flows`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify(FLOW),
    });
    const flowId = ((await created.json()) as { data: { id: string } }).data.id;
    const request = {
      url: `${platform.url}/flows/${flowId}/runs?wait=true`,
      method: "POST" as const,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: TRIGGER,
    };
    await load({ ...request, connections: 64, durationSeconds: 2 });
    const lone = await loneLatency(request.url, request, SECONDS);
    const before = cpuReading(platform.pids, []);
    const startedAt = performance.now();
    const loaded = await load({ ...request, connections: 64, durationSeconds: SECONDS });
    const runs = (loaded.rps * (performance.now() - startedAt)) / 1000;
    const cpuPerRun = cpuPerRunSince(platform.pids, before, runs);
    const queued = await measureQueued(platform, mode, token, flowId);
    return { lone, loaded, cpuPerRun, queued };
  } finally {
    await platform.stop();
  }
}

/** One request at a time for `seconds`: p50/p99 in ms, at the resolution autocannon's whole milliseconds lack. */
async function loneLatency(url: string, init: RequestInit, seconds: number): Promise<{ p50: number; p99: number }> {
  const latencies: number[] = [];
  const end = performance.now() + seconds * 1000;
  while (performance.now() < end) {
    const sent = performance.now();
    const response = await fetch(url, init);
    await response.arrayBuffer();
    if (!response.ok) throw new Error(`${url}: ${response.status}`);
    latencies.push(performance.now() - sent);
  }
  latencies.sort((a, b) => a - b);
  return { p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99) };
}

const fixed = (value: number, digits = 0) => (Number.isFinite(value) ? value.toFixed(digits) : "-");

const baseline = await startBaseline();
try {
  for (const mode of MODES) {
    for (let round = 1; round <= ROUNDS; round++) {
      const rows: string[][] = [];
      const trivialLone = await loneLatency(baseline.url, {}, SECONDS);
      const trivial = await load({ url: baseline.url, connections: 64, durationSeconds: SECONDS });
      rows.push([
        "trivial Bun.serve",
        fixed(trivialLone.p50, 2),
        fixed(trivialLone.p99, 2),
        fixed(trivial.rps),
        "100%",
        fixed(trivial.p99, 1),
        "-",
        "-",
        "-",
        "-",
      ]);
      for (const tree of TREES) {
        const { lone, loaded, cpuPerRun, queued } = await measureTree(tree, mode);
        const cpuText = (perRun: Record<string, number>) =>
          Object.entries(perRun)
            .map(([role, us]) => `${role} ${fixed(us)}`)
            .join(" + ");
        const cpu = cpuText(cpuPerRun);
        rows.push([
          tree,
          fixed(lone.p50, 2),
          fixed(lone.p99, 2),
          fixed(loaded.rps),
          `${fixed((loaded.rps / trivial.rps) * 100, 1)}%`,
          fixed(loaded.p99, 1),
          cpu,
          fixed(queued.completedPerSecond),
          `${fixed((queued.completedPerSecond / trivial.rps) * 100, 1)}%`,
          cpuText(queued.cpuPerRun),
        ]);
      }
      console.log(
        `\n${mode} mode, round ${round} of ${ROUNDS}, one-step transform: ${SECONDS} s each in wait mode, then ${QUEUED} runs queued`,
      );
      printTable(
        [
          ["tree", Math.max(...TREES.map((tree) => tree.length), 17)],
          ["lone p50 ms", 11],
          ["lone p99 ms", 11],
          ["64 conns runs/s", 15],
          ["of trivial", 10],
          ["p99 ms", 7],
          ["CPU µs/run", 24],
          ["queued ended/s", 14],
          ["of trivial", 10],
          ["queued CPU µs/run", 44],
        ],
        rows,
      );
    }
  }
} finally {
  await baseline.stop();
}
