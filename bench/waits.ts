/**
 * Runs waiting for events cost no worker time (issue 18): 1,000 runs park on a `wait.event`
 * step; the CPU the process that executes runs (the worker in scale-out, the API process in
 * embedded mode) uses while they wait is measured over `--seconds`, next to the same process
 * idle before any run was started (what the platform's own periodic jobs cost). Then one
 * event per run is sent (`POST /events`), and the time until every run has ended is printed,
 * and a run whose wait times out follows `on_timeout`.
 *
 *   bun bench/waits.ts [--runs N] [--seconds N] [--modes embedded,scale-out]
 */

import { flag } from "./lib/args.ts";
import { cpuNow, cpuSpent } from "./lib/cpu.ts";
import { callApi, type Mode, modesFlag, type RunningPlatform, signUpForBench, startPlatform } from "./lib/platform.ts";

const RUNS = flag("runs", 1000);
const SECONDS = flag("seconds", 10);
const MODES = modesFlag();

/** Runs of the flow with this status, counted from its run list. */
async function countRuns(platform: RunningPlatform, token: string, flowId: string, status: string): Promise<number> {
  let count = 0;
  let cursor: string | null = null;
  for (;;) {
    const page: { data: unknown[]; next_cursor: string | null } = await callApi(
      platform,
      token,
      "GET",
      `/flows/${flowId}/runs?status=${status}&limit=100${cursor ? `&cursor=${cursor}` : ""}`,
    );
    count += page.data.length;
    cursor = page.next_cursor;
    if (!cursor) return count;
  }
}

/** Polls until `probe` holds; throws after `limitMs` (a hang, not a measurement). */
async function until(what: string, probe: () => Promise<boolean>, limitMs = 300_000) {
  const deadline = performance.now() + limitMs;
  while (!(await probe())) {
    if (performance.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await Bun.sleep(200);
  }
}

/** CPU ms the run-executing process spends over SECONDS. */
async function cpuOver(platform: RunningPlatform): Promise<number> {
  const pids = { runner: platform.pids.worker ?? (platform.pids.api as number) };
  const before = cpuNow(pids);
  await Bun.sleep(SECONDS * 1000);
  return (cpuSpent(pids, before).runner ?? Number.NaN) * 1000;
}

async function measureMode(mode: Mode) {
  const platform = await startPlatform(mode);
  try {
    const { token } = await signUpForBench(platform.url);
    const flow = await callApi(platform, token, "POST", "/flows", {
      name: "bench waits",
      steps: [
        { name: "ask", subject: "wait.event", payload: { key: "approve-{{trigger.n}}", timeout_ms: 3_600_000 } },
        { name: "done", subject: "transform", payload: { n: "{{trigger.n}}", by: "{{steps.ask.by}}" } },
      ],
    });
    const flowId = flow.data.id as string;
    await Bun.sleep(2000);
    const idle = await cpuOver(platform);

    for (let from = 0; from < RUNS; from += 100) {
      await Promise.all(
        Array.from({ length: Math.min(100, RUNS - from) }, (_, i) =>
          callApi(platform, token, "POST", `/flows/${flowId}/runs`, { n: from + i }),
        ),
      );
    }
    // Parked: every run is running (waiting), none holds a worker; give the queue time to drain.
    await until("every run to park", async () => (await countRuns(platform, token, flowId, "running")) === RUNS);
    await Bun.sleep(2000);
    const parked = await cpuOver(platform);

    const sentAt = performance.now();
    for (let from = 0; from < RUNS; from += 100) {
      await Promise.all(
        Array.from({ length: Math.min(100, RUNS - from) }, (_, i) =>
          callApi(platform, token, "POST", "/events", { key: `approve-${from + i}`, data: { by: "bench" } }),
        ),
      );
    }
    await until(
      "every run to resume and end",
      async () => (await countRuns(platform, token, flowId, "succeeded")) === RUNS,
    );
    const resumedMs = performance.now() - sentAt;

    const timeout = await callApi(platform, token, "POST", "/flows", {
      name: "bench wait timeout",
      steps: [
        { name: "ask", subject: "wait.event", payload: { key: "nobody", timeout_ms: 1000, on_timeout: "continue" } },
      ],
    });
    const started = await callApi(platform, token, "POST", `/flows/${timeout.data.id}/runs`, {});
    await until("the timed-out run to end", async () => {
      const run = await callApi(platform, token, "GET", `/runs/${started.run_id}`);
      return run.status === "succeeded" || run.status === "failed";
    });
    const timedOut = await callApi(platform, token, "GET", `/runs/${started.run_id}`);

    console.log(
      `\n${mode} mode: ${RUNS} runs parked on wait.event, CPU of the process that runs them over ${SECONDS} s`,
    );
    console.log("idle, no runs".padEnd(40), `${idle.toFixed(0)} ms CPU`);
    console.log(`${RUNS} runs parked`.padEnd(40), `${parked.toFixed(0)} ms CPU`);
    console.log(`${RUNS} events sent → every run ended`.padEnd(40), `${(resumedMs / 1000).toFixed(2)} s`);
    console.log(
      "a 1 s wait, on_timeout continue".padEnd(40),
      `${timedOut.status}, output ${JSON.stringify(timedOut.output)}`,
    );
  } finally {
    await platform.stop();
  }
}

for (const mode of MODES) await measureMode(mode);
