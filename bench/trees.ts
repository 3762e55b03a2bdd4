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
 *   per run (API + worker, µs), read from /proc.
 */
import { resolve } from "node:path";
import { flag, listFlag } from "./lib/args.ts";
import { cpuNow, cpuSpent } from "./lib/cpu.ts";
import { type LoadResult, load } from "./lib/load.ts";
import { availableModes, type Mode, type RunningPlatform, startBaseline } from "./lib/platform.ts";
import { printTable } from "./lib/table.ts";

const TREES = listFlag("trees", ["."]).map((tree) => resolve(tree));
const MODES = listFlag("modes", availableModes()) as Mode[];
const ROUNDS = flag("rounds", 2);
const SECONDS = flag("seconds", 5);

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
    const before = cpuNow(platform.pids);
    const startedAt = performance.now();
    const loaded = await load({ ...request, connections: 64, durationSeconds: SECONDS });
    const runs = (loaded.rps * (performance.now() - startedAt)) / 1000;
    const spent = cpuSpent(platform.pids, before);
    const cpuPerRun = Object.fromEntries(Object.entries(spent).map(([role, s]) => [role, (s * 1e6) / runs]));
    return { lone, loaded, cpuPerRun };
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
  const at = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor((latencies.length * p) / 100))] ?? 0;
  return { p50: at(50), p99: at(99) };
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
      ]);
      for (const tree of TREES) {
        const { lone, loaded, cpuPerRun } = await measureTree(tree, mode);
        const cpu = Object.entries(cpuPerRun)
          .map(([role, us]) => `${role} ${fixed(us)}`)
          .join(" + ");
        rows.push([
          tree,
          fixed(lone.p50, 2),
          fixed(lone.p99, 2),
          fixed(loaded.rps),
          `${fixed((loaded.rps / trivial.rps) * 100, 1)}%`,
          fixed(loaded.p99, 1),
          cpu,
        ]);
      }
      console.log(`\n${mode} mode, round ${round} of ${ROUNDS}, ${SECONDS} s each, one-step transform in wait mode`);
      printTable(
        [
          ["tree", Math.max(...TREES.map((tree) => tree.length), 17)],
          ["lone p50 ms", 11],
          ["lone p99 ms", 11],
          ["64 conns runs/s", 15],
          ["of trivial", 10],
          ["p99 ms", 7],
          ["CPU µs/run", 24],
        ],
        rows,
      );
    }
  }
} finally {
  await baseline.stop();
}
