/**
 * Requests through a gateway whose flow is one `respond` step, in both modes, next to a
 * trivial `Bun.serve` measured in the same run (issue 10's target, scale-out: ≥ 3,000
 * req/s with p99 ≤ 30 ms at 64 connections). Each request is a run: recorded, queued,
 * executed by the worker and answered in wait mode.
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
  // The largest limit a gateway takes, so that the limiter is on the path but never refuses.
  await callApi(platform, token, "POST", "/gateway", {
    name: "bench",
    subject: "bench",
    limit: { request: 10_000, time: 1 },
  });
  for (const method of ["GET", "POST"]) {
    await callApi(platform, token, "POST", "/gateway/bench/mapping", {
      method,
      path: "/orders/:id",
      flow_id: flow.data.id,
    });
  }
  // Warm up (definitions cached, connections open), and check the answer once.
  const first = await fetch(`${platform.url}/gw/bench/orders/7`);
  if (first.status !== 200) throw new Error(`gateway answered ${first.status} ${await first.text()}`);
  await load({ url: `${platform.url}/gw/bench/orders/7`, connections: CONNECTIONS, durationSeconds: 2 });

  const rows: [string, LoadResult][] = [];
  const measure = async (name: string, options: Parameters<typeof load>[0]) => {
    rows.push([name, await loadCounted(platform, name, options)]);
  };
  await measure("gateway GET (respond step)", {
    url: `${platform.url}/gw/bench/orders/7`,
    connections: CONNECTIONS,
    durationSeconds: SECONDS,
  });
  await measure("gateway POST JSON (respond step)", {
    url: `${platform.url}/gw/bench/orders/7`,
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
