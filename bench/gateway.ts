/**
 * Requests through a gateway whose flow is one `respond` step, in both modes, next to a
 * trivial `Bun.serve` measured in the same run (issue 10's target, scale-out: ≥ 3,000
 * req/s with p99 ≤ 30 ms at 64 connections). Each request is a run, recorded and answered
 * in wait mode; its flow being pure, the API that accepted it runs it in place (issue 34).
 * The load is spread over four gateways of the flow, each at the largest limit a gateway
 * takes, 10,000 requests a second, which one gateway alone reaches here on a fast day.
 *
 *   bun bench/gateway.ts [--seconds N] [--rounds N] [--connections N]
 *
 * The platform runs as the README starts it (embedded: `bun run start`; scale-out:
 * `start:api` + `start:worker` on DATABASE_URL and REDIS_URL), in processes of its own,
 * with NODE_ENV=production. Scale-out runs when both variables are set. Each row's CPU per
 * request, every platform process's (from /proc) and in scale-out PostgreSQL's and Redis's,
 * is printed before the table: steadier than rates on a machine whose speed moves. Every
 * row's path is warmed up first, then the rows take turns, each measured in ROUNDS slices:
 * a row's rate is over all its slices, its latencies are the median slice's.
 *
 * Loaded as fast as they answer, CONNECTIONS at a time, a request waits behind the others in
 * flight: by Little's law its mean latency is CONNECTIONS / rate, so the p99s of two servers
 * compare their rates as much as their requests' cost (issue 34's target 4, a gateway's p99
 * at most 3× the trivial server's, asks there for about a third of its rate). So a gateway GET and
 * the trivial server are also sent requests at one steady pace both keep up with (`--rate`
 * a second, default half what the gateway GET answered; lib/load.ts, `paced`), taking turns:
 * their latencies compare what a request costs.
 */

import { flag } from "./lib/args.ts";
import { cpuNow, cpuSpent, serverCpuSeconds } from "./lib/cpu.ts";
import { inEveryMode } from "./lib/every-mode.ts";
import { type LoadOptions, type LoadResult, load, type PacedOptions, paced, report } from "./lib/load.ts";
import { availableModes, callApi, type RunningPlatform, signUpForBench } from "./lib/platform.ts";
import { printTable } from "./lib/table.ts";

const SECONDS = flag("seconds", 10);
/** Each row is measured in this many slices of SECONDS / ROUNDS, the rows taking turns. */
const ROUNDS = flag("rounds", 3);
const SLICE_SECONDS = Math.max(1, Math.round(SECONDS / ROUNDS));
/** Each row's load before any is measured. */
const WARM_UP_SECONDS = 5;
const CONNECTIONS = flag("connections", 64);
/** Requests a second of the comparison at one rate; absent, half what the gateway GET answered. */
const RATE = Bun.argv.includes("--rate") ? flag("rate", 1) : null;

/** The gateways the load is spread over, each of the same flow and with the largest limit. */
const SUBJECTS = ["bench0", "bench1", "bench2", "bench3"];

/** The database and broker servers a scale-out platform uses, whose CPU counts as its own. */
const SERVERS = ["postgres", "redis-server"];

/** What one row spent over its slices: requests answered, CPU per process, and each slice's figures. */
interface RowTally {
  requests: number;
  cpuSeconds: Record<string, number>;
  slices: LoadResult[];
}

/**
 * Loads as `load` does, and adds to `tally` the requests answered and the CPU each platform
 * process (and in scale-out each server: every `postgres` and `redis-server` of the machine)
 * spent on them.
 */
async function loadCounted(platform: RunningPlatform, tally: RowTally, options: LoadOptions) {
  const servers = platform.mode === "scale-out" ? SERVERS : [];
  const before = cpuNow(platform.pids);
  const serversBefore = servers.map(serverCpuSeconds);
  const result = await load(options);
  tally.requests += result.rps * options.durationSeconds;
  tally.slices.push(result);
  const spent = [
    ...Object.entries(cpuSpent(platform.pids, before)),
    ...servers.map((server, i): [string, number] => [server, serverCpuSeconds(server) - (serversBefore[i] ?? 0)]),
  ];
  for (const [role, seconds] of spent) tally.cpuSeconds[role] = (tally.cpuSeconds[role] ?? 0) + seconds;
}

const median = (values: number[]) => values.toSorted((a, b) => a - b)[values.length >> 1] as number;

/** A row over its slices: the rate of all its requests, the median slice's latencies, every failure. */
function rowResult({ slices }: Pick<RowTally, "slices">): LoadResult {
  return {
    rps: slices.reduce((sum, slice) => sum + slice.rps, 0) / slices.length,
    p50: median(slices.map((slice) => slice.p50)),
    p99: median(slices.map((slice) => slice.p99)),
    failures: slices.reduce((sum, slice) => sum + slice.failures, 0),
  };
}

async function measureMode(platform: RunningPlatform, baselineUrl: string): Promise<void> {
  const { token } = await signUpForBench(platform.url);
  const auth = { authorization: `Bearer ${token}`, "content-type": "application/json" };
  const flow = await callApi(platform, token, "POST", "/flows", {
    name: "gateway bench",
    steps: [
      {
        name: "reply",
        subject: "respond",
        payload: { status: 200, body: { id: "{{trigger.params.id}}", qty: "{{trigger.qty}}" } },
      },
    ],
  });
  // The largest limit a gateway takes, so that the limiter is on the path but never refuses:
  // 10,000 requests a second, which a fast day here passes, so the load is spread over a few
  // gateways of the same flow (a 429 would count as a failure, and be answered faster).
  for (const subject of SUBJECTS) {
    await callApi(platform, token, "POST", "/gateway", { name: subject, subject, limit: { request: 10_000, time: 1 } });
    for (const method of ["GET", "POST"]) {
      await callApi(platform, token, "POST", `/gateway/${subject}/mapping`, {
        method,
        path: "/orders/:id",
        flow_id: flow.data.id,
      });
    }
  }
  const gatewayUrl = `${platform.url}/gw/${SUBJECTS[0]}/orders/7`;
  const spread = (n: number) => `/gw/${SUBJECTS[n % SUBJECTS.length]}/orders/7`;
  const first = await fetch(gatewayUrl);
  if (first.status !== 200) throw new Error(`gateway answered ${first.status} ${await first.text()}`);

  const rows: [string, Omit<LoadOptions, "connections" | "durationSeconds">][] = [
    ["gateway GET (respond step)", { url: gatewayUrl, pathOf: spread }],
    [
      "gateway POST JSON (respond step)",
      {
        url: gatewayUrl,
        pathOf: spread,
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ qty: 3, note: "benchmark order" }),
      },
    ],
    // The same flow started by hand in wait mode: the engine alone, for the gateway's own share.
    [
      "by hand, wait mode (engine alone)",
      {
        url: `${platform.url}/flows/${flow.data.id}/runs?wait=true`,
        method: "POST",
        headers: auth,
        body: JSON.stringify({ qty: 3 }),
      },
    ],
  ];
  // Every row's path is warmed up (definitions cached, connections open, code compiled: an
  // API's CPU per request falls by a third over its first 20 s), and the rows take turns, so
  // that neither warm-up nor the machine's drifting speed favours the row measured last.
  for (const [, options] of rows)
    await load({ ...options, connections: CONNECTIONS, durationSeconds: WARM_UP_SECONDS });
  const tallies = rows.map((): RowTally => ({ requests: 0, cpuSeconds: {}, slices: [] }));
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, [, options]] of rows.entries()) {
      await loadCounted(platform, tallies[i] as RowTally, {
        ...options,
        connections: CONNECTIONS,
        durationSeconds: SLICE_SECONDS,
      });
    }
  }
  for (const [i, [name]] of rows.entries()) {
    const { requests, cpuSeconds } = tallies[i] as RowTally;
    const spent = Object.entries(cpuSeconds)
      .map(([role, seconds]) => `${role} ${Math.round((seconds / requests) * 1e6)} µs`)
      .join(", ");
    console.log(`${platform.mode}, ${name}: CPU per request ${spent}`);
  }
  const results = rows.map(([name], i): [string, LoadResult] => [name, rowResult(tallies[i] as RowTally)]);
  const trivial = await load({ url: baselineUrl, connections: CONNECTIONS, durationSeconds: SLICE_SECONDS * ROUNDS });
  report(`${platform.mode} mode, ${CONNECTIONS} connections, ${SLICE_SECONDS * ROUNDS} s each`, trivial, results);
  const gatewayGet = results[0]?.[1];
  if (gatewayGet) {
    const sent = { url: gatewayUrl, pathOf: spread };
    await compareAtOneRate(platform.mode, sent, gatewayGet, { url: baselineUrl }, trivial);
  }
}

/**
 * The gateway GET and the trivial server at one rate, taking turns (ROUNDS slices each): their
 * median slices' latencies and the ratio of their p99s, after what Little's law says of the
 * p99s measured as fast as they answer.
 */
async function compareAtOneRate(
  mode: string,
  gateway: Omit<PacedOptions, "rate" | "durationSeconds">,
  gatewayAsFast: LoadResult,
  trivial: Omit<PacedOptions, "rate" | "durationSeconds">,
  trivialAsFast: LoadResult,
): Promise<void> {
  const meanWait = (result: LoadResult) => ((CONNECTIONS / result.rps) * 1000).toFixed(1);
  console.log(
    `\n${mode} mode, as fast as answered: gateway GET p99 ${(gatewayAsFast.p99 / trivialAsFast.p99).toFixed(1)}× the trivial server's; ` +
      `mean latency by Little's law (connections / rate) ${meanWait(gatewayAsFast)} ms against ${meanWait(trivialAsFast)} ms`,
  );
  const rate = RATE ?? Math.max(100, Math.round(gatewayAsFast.rps / 200) * 100);
  const slices: [LoadResult[], LoadResult[]] = [[], []];
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, options] of [gateway, trivial].entries()) {
      slices[i as 0 | 1].push(await paced({ ...options, rate, durationSeconds: SLICE_SECONDS }));
    }
  }
  const [atRate, trivialAtRate] = slices.map((each) => rowResult({ slices: each })) as [LoadResult, LoadResult];
  const cells = (name: string, result: LoadResult) => [
    name,
    Math.round(result.rps).toString(),
    result.p50.toFixed(2),
    result.p99.toFixed(2),
    `${(result.p99 / trivialAtRate.p99).toFixed(1)}×`,
    String(result.failures),
  ];
  console.log(`${mode} mode, ${rate} requests a second sent at a steady pace`);
  printTable(
    [
      ["what", 34],
      ["req/s", 9],
      ["p50 ms", 7],
      ["p99 ms", 7],
      ["p99 vs trivial", 15],
      ["failed", 7],
    ],
    [cells("trivial Bun.serve", trivialAtRate), cells("gateway GET (respond step)", atRate)],
  );
}

await inEveryMode(availableModes(), measureMode);
