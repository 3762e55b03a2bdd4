/**
 * Requests through a gateway whose flow is one `respond` step, in both modes, next to a
 * trivial `Bun.serve` measured in the same run (issue 10's target, scale-out: ≥ 3,000
 * req/s with p99 ≤ 30 ms at 64 connections). Each request is a run, recorded and answered
 * in wait mode; its flow being pure, the API that accepted it runs it in place (issue 34).
 * The load is spread over four gateways of the flow, each at the largest limit a gateway
 * takes, 10,000 requests a second, which one gateway alone reaches here on a fast day.
 *
 *   bun bench/gateway.ts [--seconds N] [--connections N]
 *
 * The platform runs as the README starts it (embedded: `bun run start`; scale-out:
 * `start:api` + `start:worker` on DATABASE_URL and REDIS_URL), in processes of its own,
 * with NODE_ENV=production. Scale-out runs when both variables are set. Each row's CPU per
 * request, every platform process's (from /proc) and in scale-out PostgreSQL's and Redis's,
 * is printed before the table: steadier than rates on a machine whose speed moves.
 */

import { flag } from "./lib/args.ts";
import { cpuNow, cpuSpent, serverCpuSeconds } from "./lib/cpu.ts";
import { reportEveryMode } from "./lib/every-mode.ts";
import { type LoadResult, load } from "./lib/load.ts";
import { callApi, type RunningPlatform, signUpForBench } from "./lib/platform.ts";

const SECONDS = flag("seconds", 10);
const CONNECTIONS = flag("connections", 64);

/** The gateways the load is spread over, each of the same flow and with the largest limit. */
const SUBJECTS = ["bench0", "bench1", "bench2", "bench3"];

/** The database and broker servers a scale-out platform uses, whose CPU counts as its own. */
const SERVERS = ["postgres", "redis-server"];

/**
 * Loads as `load` does, and prints the CPU each platform process (and in scale-out each
 * server: every `postgres` and `redis-server` of the machine) spent per request answered.
 */
async function loadCounted(platform: RunningPlatform, name: string, options: Parameters<typeof load>[0]) {
  const servers = platform.mode === "scale-out" ? SERVERS : [];
  const before = cpuNow(platform.pids);
  const serversBefore = servers.map(serverCpuSeconds);
  const result = await load(options);
  const requests = result.rps * options.durationSeconds;
  const spentByServer = servers.map((server, i): [string, number] => [
    server,
    serverCpuSeconds(server) - (serversBefore[i] ?? 0),
  ]);
  const spent = [...Object.entries(cpuSpent(platform.pids, before)), ...spentByServer]
    .map(([role, seconds]) => `${role} ${Math.round((seconds / requests) * 1e6)} µs`)
    .join(", ");
  console.log(`${platform.mode}, ${name}: CPU per request ${spent}`);
  return result;
}

async function measureMode(platform: RunningPlatform): Promise<[string, LoadResult][]> {
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
  // Warm up (definitions cached, connections open), and check the answer once.
  const first = await fetch(gatewayUrl);
  if (first.status !== 200) throw new Error(`gateway answered ${first.status} ${await first.text()}`);
  await load({ url: gatewayUrl, pathOf: spread, connections: CONNECTIONS, durationSeconds: 2 });

  const rows: [string, LoadResult][] = [];
  const measure = async (name: string, options: Parameters<typeof load>[0]) => {
    rows.push([name, await loadCounted(platform, name, options)]);
  };
  await measure("gateway GET (respond step)", {
    url: gatewayUrl,
    pathOf: spread,
    connections: CONNECTIONS,
    durationSeconds: SECONDS,
  });
  await measure("gateway POST JSON (respond step)", {
    url: gatewayUrl,
    pathOf: spread,
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ qty: 3, note: "benchmark order" }),
    connections: CONNECTIONS,
    durationSeconds: SECONDS,
  });
  // The same flow started by hand in wait mode: the engine alone, for the gateway's own share.
  await measure("by hand, wait mode (engine alone)", {
    url: `${platform.url}/flows/${flow.data.id}/runs?wait=true`,
    method: "POST",
    headers: auth,
    body: JSON.stringify({ qty: 3 }),
    connections: CONNECTIONS,
    durationSeconds: SECONDS,
  });
  return rows;
}

await reportEveryMode({ connections: CONNECTIONS, seconds: SECONDS }, measureMode);
