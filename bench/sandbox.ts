/**
 * js step sandbox throughput: evaluations per second of a trivial function and the latency
 * percentiles, on the caller's thread and on Worker pools of several sizes, in the same run.
 * Each evaluation is a fresh QuickJS runtime and context (as in production); the module is
 * loaded once per thread.
 *
 *   bun bench/sandbox.ts [--evaluations N] [--rounds R] [--in-flight C]
 *
 * Configurations are interleaved round by round (so a busy moment hits all of them alike) and
 * the median round is printed. Wall-clock rates depend on what else runs on the machine (its
 * load average is printed); the CPU time this process spends per evaluation (all its threads)
 * does much less, and one idle core's worth of it is printed beside.
 */
import { loadavg } from "node:os";
import { createSandbox, type Sandbox } from "../packages/core/src/engine/sandbox/index.ts";
import { flag } from "./lib/args.ts";

const EVALUATIONS = flag("evaluations", 20_000);
const ROUNDS = flag("rounds", 3);
/** Evaluations awaited at once, as the engine's consumer would have. */
const IN_FLIGHT = flag("in-flight", 32);
const CODE = "export default (input) => ({ doubled: input.n * 2, name: input.trigger.name })";
const CONFIGURATIONS = [
  { name: "caller's thread", workers: 0 },
  { name: "1 worker", workers: 1 },
  { name: "2 workers", workers: 2 },
  { name: "4 workers", workers: 4 },
];

interface Round {
  perSecond: number;
  p50: number;
  p99: number;
  /** CPU time of the whole process (every thread) per evaluation, in µs. */
  cpuMicros: number;
}

async function round(sandbox: Sandbox, evaluations: number): Promise<Round> {
  const latencies: number[] = [];
  let started = 0;
  const cpu = process.cpuUsage();
  const began = performance.now();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (started < evaluations) {
        const n = started++;
        const at = performance.now();
        const result = (await sandbox.run(CODE, { n, trigger: { name: "bench" } })) as { doubled: number };
        if (result.doubled !== n * 2) throw new Error(`wrong result for ${n}`);
        latencies.push(performance.now() - at);
      }
    }),
  );
  const seconds = (performance.now() - began) / 1000;
  const used = process.cpuUsage(cpu);
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * q))] ?? 0;
  return {
    perSecond: evaluations / seconds,
    p50: at(0.5),
    p99: at(0.99),
    cpuMicros: (used.user + used.system) / evaluations,
  };
}

const sandboxes = CONFIGURATIONS.map(({ workers }) =>
  createSandbox({ memoryBytes: 64 * 1024 * 1024, timeoutMs: 1000, workers }),
);
// warm up: modules loaded and compiled in every thread
await Promise.all(sandboxes.map((sandbox) => round(sandbox, 2000)));

const results: Round[][] = CONFIGURATIONS.map(() => []);
for (let r = 0; r < ROUNDS; r++) {
  for (const [index, sandbox] of sandboxes.entries()) results[index]?.push(await round(sandbox, EVALUATIONS));
}
await Promise.all(sandboxes.map((sandbox) => sandbox.close()));

const median = (rounds: Round[]) => rounds.toSorted((a, b) => a.perSecond - b.perSecond)[rounds.length >> 1];
console.log(
  `sandbox: ${EVALUATIONS} evaluations x ${ROUNDS} rounds, ${IN_FLIGHT} in flight, ${navigator.hardwareConcurrency} cores, load average ${loadavg()
    .map((load) => load.toFixed(1))
    .join(" ")}`,
);
for (const [index, { name }] of CONFIGURATIONS.entries()) {
  const best = median(results[index] ?? []);
  if (!best) continue;
  console.log(
    `${name.padEnd(16)} ${Math.round(best.perSecond).toLocaleString("en").padStart(7)} evaluations/s   p50 ${best.p50.toFixed(2)} ms   p99 ${best.p99.toFixed(2)} ms   cpu ${Math.round(best.cpuMicros)} µs/evaluation (${Math.round(1e6 / best.cpuMicros).toLocaleString("en")}/s per idle core)`,
  );
}
