/**
 * Where scale-out stops growing on this machine (issue 21's capacity check): 1, 2 and 4
 * API processes with as many workers, against a local Redis Cluster of three primaries
 * with a replica each (RUN_QUEUE_PARTITIONS=16, or `--partitions`) and PostgreSQL, each deployment started
 * afresh, next to a trivial `Bun.serve` measured in the same run.
 *
 *   bun bench/scaling.ts [--seconds N] [--connections N] [--processes 1,2,4] [--flows N] [--partitions N]
 *
 * The load is public-access webhooks (1 KB JSON, acknowledge mode) spread over `--flows`
 * flows of one `transform` step (default 16, so their runs spread over the partitions and
 * so over the cluster's shards), shared out over the API processes by the load generator.
 * For each deployment: webhooks acknowledged and runs completed per second, p99 of the
 * acknowledgement, the CPU each component spent per webhook (API processes, workers,
 * PostgreSQL with its exited backends, every Redis node) and how many of the machine's
 * cores all of it kept busy, with PostgreSQL's WAL and the database's growth per webhook.
 * Last, the Redis memory one queued run takes: entries as the API queues them (the run as
 * accepted, with its 1 KB trigger) appended to the partitions with no worker reading,
 * `used_memory` of every primary before and after.
 */
import { randomUUID } from "node:crypto";
import { availableParallelism } from "node:os";
import { createRedisBroker } from "../packages/core/src/broker/redis/index.ts";
import {
  createRunQueue,
  type LocalRedisCluster,
  redisClusterMissing,
  startLocalRedisCluster,
} from "../packages/core/src/testing.ts";
import { testEnv } from "../packages/db/src/testing.ts";
import { flag, listFlag } from "./lib/args.ts";
import { load, report } from "./lib/load.ts";
import { signUpForBench, startBaseline, startPlatform } from "./lib/platform.ts";
import { awaitCompletion, createFlow, eventBody, type Ingest, ingest } from "./lib/webhook-ingest.ts";

const SECONDS = flag("seconds", 10);
const CONNECTIONS = flag("connections", 64);
const FLOWS = flag("flows", 16);
const PROCESSES = listFlag("processes", ["1", "2", "4"]).map(Number);
const SETTINGS = { connections: CONNECTIONS, seconds: SECONDS };
const PARTITIONS = flag("partitions", 16);
const QUEUED_FOR_MEMORY = 20_000;

const missing = !testEnv.DATABASE_URL ? "DATABASE_URL is not set" : redisClusterMissing();
if (missing) {
  console.log(`bench/scaling.ts needs PostgreSQL and redis-server: ${missing}`);
  process.exit(0);
}

async function measure(redisUrl: string, processes: number): Promise<Ingest> {
  const platform = await startPlatform(
    "scale-out",
    { RUN_QUEUE_PARTITIONS: String(PARTITIONS) },
    { redisUrl, apis: processes, workers: processes },
  );
  try {
    const { token } = await signUpForBench(platform.url);
    const target = { platform, token };
    const flows = [];
    for (let i = 0; i < FLOWS; i++) flows.push(await createFlow(target, `flow-${i}`, {}));
    // Warm up: flows cached, connections open, every process's code compiled.
    const warmUp = await createFlow(target, "warm-up", {});
    await load({
      url: warmUp.webhookUrl,
      alsoUrls: platform.alsoUrls.map((url) => warmUp.webhookUrl.replace(platform.url, url)),
      method: "POST",
      headers: { "content-type": "application/json" },
      body: eventBody("evt_warm"),
      connections: CONNECTIONS,
      durationSeconds: 2,
    });
    await awaitCompletion(target, warmUp, SETTINGS);
    return await ingest(target, flows, SETTINGS, { body: eventBody("evt_scaling") });
  } finally {
    await platform.stop();
  }
}

/** Bytes of Redis memory per queued run: entries shaped as the API's, on every partition, unread. */
async function memoryPerQueuedRun(cluster: LocalRedisCluster): Promise<number> {
  const broker = await createRedisBroker(cluster.url);
  try {
    const queue = createRunQueue(broker, PARTITIONS);
    const trigger = eventBody("evt_memory");
    const before = await cluster.usedMemory();
    for (let i = 0; i < QUEUED_FOR_MEMORY; i += 500) {
      await Promise.all(
        Array.from({ length: 500 }, () =>
          queue.append({
            id: randomUUID(),
            flowId: randomUUID(),
            accountId: "acct_memory",
            revision: 1,
            waiter: null,
            trigger,
          }),
        ),
      );
    }
    return ((await cluster.usedMemory()) - before) / QUEUED_FOR_MEMORY;
  } finally {
    await broker.close();
  }
}

const sum = (cpu: Record<string, number>, role: string) =>
  Object.entries(cpu)
    .filter(([name]) => name === role || name.startsWith(`${role} `))
    .reduce((total, [, micros]) => total + micros, 0);

const cluster = await startLocalRedisCluster();
const baseline = await startBaseline();
try {
  const results: [number, Ingest][] = [];
  for (const processes of PROCESSES) results.push([processes, await measure(cluster.url, processes)]);
  const trivial = await load({ url: baseline.url, connections: CONNECTIONS, durationSeconds: SECONDS });
  report(
    `scale-out on a Redis Cluster (3 primaries + 3 replicas, ${PARTITIONS} partitions), ${FLOWS} flows, 1 KB JSON, ${CONNECTIONS} connections, ${SECONDS} s each, ${availableParallelism()} cores`,
    trivial,
    results.map(([processes, result]) => [`${processes} API + ${processes} worker processes`, result.load]),
  );
  console.log(
    "processes".padEnd(10),
    "answered".padStart(9),
    "completed/s".padStart(12),
    "lost".padStart(5),
    "cores busy".padStart(11),
    "WAL B".padStart(6),
    "DB B".padStart(6),
    "  CPU µs per webhook: api, worker, postgres, redis",
  );
  for (const [processes, result] of results) {
    const cpu = result.cpuPerWebhook;
    const perWebhook = ["api", "worker", "postgres", "redis"].map((role) => Math.round(sum(cpu, role)));
    const busy = (perWebhook.reduce((a, b) => a + b, 0) * result.answered) / 1e6 / result.windowSeconds;
    console.log(
      String(processes).padEnd(10),
      String(result.answered).padStart(9),
      Math.round(result.completionsPerSecond).toString().padStart(12),
      String(result.lost).padStart(5),
      busy.toFixed(2).padStart(11),
      Math.round(result.walBytes ?? 0)
        .toString()
        .padStart(6),
      Math.round(result.databaseBytes ?? 0)
        .toString()
        .padStart(6),
      ` ${perWebhook.join(", ")}`,
    );
  }
  const memory = await memoryPerQueuedRun(cluster);
  console.log(`\nRedis memory per queued run (1 KB trigger carried in the entry): ${Math.round(memory)} bytes`);
} finally {
  await baseline.stop();
  await cluster.stop();
}
