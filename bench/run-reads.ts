/**
 * Reading runs back: a flow's run list (`GET /flows/{id}/runs`), the account's
 * (`GET /runs`) and one run (`GET /runs/{id}`), each at `--connections` connections, next to
 * a trivial `Bun.serve` loaded the same way in the same run, with the CPU each request cost
 * the API process and (scale-out) PostgreSQL. A list reads every partition of `runs` (a day
 * each, the retention's and a week ahead): `--partition-days 33` (bench/lib/platform.ts)
 * reads a scale-out deployment a month old; embedded mode has the ones its worker makes at
 * start (a week ahead).
 *
 *   bun bench/run-reads.ts [--seconds N] [--connections N] [--partition-days N] [--modes embedded,scale-out]
 *
 * Side by side with an older tree: copy this file into its `bench/` and run it there too.
 */
import { flag } from "./lib/args.ts";
import { cpuNow, cpuSpent, serverCpuSeconds } from "./lib/cpu.ts";
import { inEveryMode } from "./lib/every-mode.ts";
import { type LoadResult, load } from "./lib/load.ts";
import { callApi, modesFlag, PARTITION_DAYS, type RunningPlatform, signUpForBench } from "./lib/platform.ts";
import { printTable } from "./lib/table.ts";

const SECONDS = flag("seconds", 5);
const CONNECTIONS = flag("connections", 64);
/** Runs the flow has when it is read: a list's page is 50. */
const RUNS = 200;

interface Row {
  what: string;
  result: LoadResult;
  cpu: Record<string, number>;
}

async function loadCounted(platform: RunningPlatform, what: string, url: string, token: string): Promise<Row> {
  const options = { url, headers: { authorization: `Bearer ${token}` }, connections: CONNECTIONS };
  await load({ ...options, durationSeconds: 1 });
  const before = cpuNow(platform.pids);
  const postgresBefore = serverCpuSeconds("postgres");
  const result = await load({ ...options, durationSeconds: SECONDS });
  const requests = result.rps * SECONDS;
  const spent = cpuSpent(platform.pids, before);
  if (platform.mode === "scale-out") spent.postgres = serverCpuSeconds("postgres") - postgresBefore;
  const cpu = Object.fromEntries(
    Object.entries(spent)
      .filter(([role]) => role !== "worker")
      .map(([role, seconds]) => [role, Math.round((seconds * 1e6) / requests)]),
  );
  return { what, result, cpu };
}

await inEveryMode(modesFlag(), async (platform, baselineUrl) => {
  const { token } = await signUpForBench(platform.url);
  const flow = await callApi(platform, token, "POST", "/flows", {
    name: "bench reads",
    steps: [{ name: "shape", subject: "transform", payload: { order: "{{trigger.order}}" } }],
  });
  const flowId: string = flow.data.id;
  let runId = "";
  for (let i = 0; i < RUNS; i++) {
    runId = (await callApi(platform, token, "POST", `/flows/${flowId}/runs`, { order: `A-${i}` })).run_id;
  }
  const partitions =
    platform.mode === "scale-out" && PARTITION_DAYS !== null ? `up to ${PARTITION_DAYS} days ahead` : "its worker's";
  const rows = [
    await loadCounted(platform, "GET /flows/{id}/runs", `${platform.url}/flows/${flowId}/runs`, token),
    await loadCounted(platform, "GET /runs", `${platform.url}/runs`, token),
    await loadCounted(platform, "GET /runs/{id}", `${platform.url}/runs/${runId}`, token),
  ];
  const trivial = await load({ url: baselineUrl, connections: CONNECTIONS, durationSeconds: SECONDS });
  console.log(`\n${platform.mode} mode, ${CONNECTIONS} connections, ${SECONDS} s each, partitions ${partitions}`);
  printTable(
    [
      ["what", 22],
      ["req/s", 8],
      ["of trivial", 11],
      ["p50 ms", 7],
      ["p99 ms", 7],
      ["CPU µs/request", 26],
    ],
    [
      ["trivial Bun.serve", String(Math.round(trivial.rps)), "100%", String(trivial.p50), String(trivial.p99), "-"],
      ...rows.map(({ what, result, cpu }) => [
        what,
        String(Math.round(result.rps)),
        `${((100 * result.rps) / trivial.rps).toFixed(1)}%`,
        String(result.p50),
        String(result.p99),
        Object.entries(cpu)
          .map(([role, us]) => `${role} ${us}`)
          .join(" + "),
      ]),
    ],
  );
});
