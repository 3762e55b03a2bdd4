/**
 * Broker throughput: append and consume for each adapter this machine can run, next to
 * raw pipelined XADD on the same Redis, in the same run.
 *
 *   bun bench/broker.ts [--messages N] [--rounds R]
 *
 * Redis and PostgreSQL are used when REDIS_URL / DATABASE_URL are set (PostgreSQL in a
 * scratch database dropped afterwards); PGlite always runs, in memory. The Redis
 * measurements are interleaved round by round (so a busy moment hits all of them alike)
 * and the median of the rounds is printed, with the adapter's ratio to each baseline.
 */
import { randomBytes } from "node:crypto";
// The baseline is ioredis as it comes, not the adapter's client factory.
import { Redis } from "../packages/core/node_modules/ioredis/built/index.js";
import { createBroker } from "../packages/core/src/broker/index.ts";
import type { Broker } from "../packages/core/src/broker/port.ts";
import { type DatabaseHandle, migrateToLatest, openDatabase } from "../packages/db/src/index.ts";
import { createScratchPostgres, testEnv } from "../packages/db/src/testing.ts";
import { flag } from "./lib/args.ts";

const REDIS_MESSAGES = flag("messages", 200_000);
const ROUNDS = flag("rounds", 3);
const POSTGRES_MESSAGES = Math.min(REDIS_MESSAGES, 20_000);
const PGLITE_MESSAGES = Math.min(REDIS_MESSAGES, 10_000);
const PAYLOAD = JSON.stringify({ runId: "run_0123456789abcdef", accountId: "acct_0123456789" });
/** Appends in flight at once, as in a busy API process. */
const IN_FLIGHT = 512;
/** Entries a consumer reads and acknowledges per round trip. */
const BATCH = 100;
const CONSUMERS = 4;

/** Messages per second of one measurement, by name, one figure per round. */
const rates = new Map<string, number[]>();

async function measure(what: string, messages: number, work: () => Promise<void>): Promise<void> {
  const started = performance.now();
  await work();
  const seconds = (performance.now() - started) / 1000;
  rates.set(what, [...(rates.get(what) ?? []), messages / seconds]);
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};
const rateOf = (what: string) => median(rates.get(what) ?? []);

/** Runs `count` calls, at most `inFlight` at a time. */
async function saturate(count: number, inFlight: number, call: () => Promise<unknown>): Promise<void> {
  let started = 0;
  const lane = async () => {
    while (started < count) {
      started++;
      await call();
    }
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, count) }, lane));
}

async function benchAdapter(name: string, broker: Broker, messages: number): Promise<void> {
  const scope = `bench-${randomBytes(4).toString("hex")}`;
  await broker.ensureGroup(scope, "s", "g");
  await measure(`${name}: append, ${IN_FLIGHT} in flight`, messages, () =>
    saturate(messages, IN_FLIGHT, () => broker.append(scope, "s", PAYLOAD)),
  );
  let consumed = 0;
  await measure(`${name}: consume, ${CONSUMERS} members x (read ${BATCH} + ack)`, messages, async () => {
    await Promise.all(
      Array.from({ length: CONSUMERS }, async (_, i) => {
        for (;;) {
          const entries = await broker.readGroup(scope, "s", "g", `c${i}`, { count: BATCH });
          if (entries.length === 0) return;
          await broker.ack(
            scope,
            "s",
            "g",
            entries.map((e) => e.id),
          );
          consumed += entries.length;
        }
      }),
    );
  });
  if (consumed !== messages) throw new Error(`${name}: consumed ${consumed} of ${messages}`);
  await broker.deleteStream(scope, "s");
}

async function rawIoredis(client: Redis, messages: number): Promise<void> {
  const key = `bench-raw-${randomBytes(4).toString("hex")}`;
  await measure(`raw ioredis: XADD pipelined ${IN_FLIGHT} at a time`, messages, async () => {
    for (let sent = 0; sent < messages; sent += IN_FLIGHT) {
      const pipeline = client.pipeline();
      for (let i = 0; i < Math.min(IN_FLIGHT, messages - sent); i++) pipeline.xadd(key, "*", "p", PAYLOAD);
      await pipeline.exec();
    }
  });
  await client.xgroup("CREATE", key, "g", "0");
  await measure(`raw ioredis: XREADGROUP ${BATCH} + XACK`, messages, async () => {
    for (;;) {
      const reply = (await client.xreadgroup("GROUP", "g", "c", "COUNT", BATCH, "STREAMS", key, ">")) as
        | [string, [string, string[]][]][]
        | null;
      const entries = reply?.[0]?.[1] ?? [];
      if (entries.length === 0) return;
      await client.xack(key, "g", ...entries.map(([id]) => id));
    }
  });
  await client.del(key);
}

/** redis-benchmark itself: C, 50 connections, 16 commands per pipeline. */
async function redisBenchmark(binary: string, url: string, client: Redis, messages: number): Promise<void> {
  const { hostname, port } = new URL(url);
  const key = `bench-cli-${randomBytes(4).toString("hex")}`;
  const args = ["-h", hostname, "-p", port || "6379", "-n", String(messages), "-P", "16", "-q"];
  const child = Bun.spawn([binary, ...args, "XADD", key, "*", "p", PAYLOAD], { stdout: "pipe", stderr: "pipe" });
  const output = await new Response(child.stdout).text();
  await child.exited;
  await client.del(key);
  const rps = Number(output.match(/([\d.]+) requests per second/)?.[1]);
  if (!Number.isFinite(rps)) throw new Error(`redis-benchmark printed no rate: ${output.slice(-200)}`);
  rates.set("redis-benchmark: XADD -P 16, 50 connections", [
    ...(rates.get("redis-benchmark: XADD -P 16, 50 connections") ?? []),
    rps,
  ]);
}

function print(title: string): void {
  console.log(`\n${title}`);
  for (const [what, values] of rates) {
    const spread =
      values.length > 1 ? `  (rounds: ${values.map((v) => Math.round(v).toLocaleString("en")).join(", ")})` : "";
    console.log(`  ${what.padEnd(54)} ${Math.round(median(values)).toLocaleString("en").padStart(9)} msgs/s${spread}`);
  }
  rates.clear();
}

console.log(`Broker benchmark: Bun ${Bun.version}, payload ${PAYLOAD.length} bytes`);

if (testEnv.REDIS_URL) {
  const url = testEnv.REDIS_URL;
  const client = new Redis(url);
  // The Redis adapter never touches the database handle.
  const broker = await createBroker({ redisUrl: url, database: {} as DatabaseHandle });
  const cli = Bun.which("redis-benchmark");
  for (let round = 0; round < ROUNDS; round++) {
    if (cli) await redisBenchmark(cli, url, client, REDIS_MESSAGES);
    await rawIoredis(client, REDIS_MESSAGES);
    await benchAdapter("redis adapter", broker, REDIS_MESSAGES);
  }
  const adapter = rateOf(`redis adapter: append, ${IN_FLIGHT} in flight`);
  const raw = rateOf(`raw ioredis: XADD pipelined ${IN_FLIGHT} at a time`);
  const c = cli ? rateOf("redis-benchmark: XADD -P 16, 50 connections") : undefined;
  print(`Redis, ${REDIS_MESSAGES.toLocaleString("en")} messages, median of ${ROUNDS} rounds`);
  console.log(`  redis adapter append / raw ioredis pipelined XADD: ${((adapter / raw) * 100).toFixed(0)}%`);
  if (c) console.log(`  redis adapter append / redis-benchmark XADD:        ${((adapter / c) * 100).toFixed(0)}%`);
  await broker.close();
  client.disconnect();
} else {
  console.log("\nRedis skipped: REDIS_URL is not set");
}

async function benchDatabase(name: string, database: DatabaseHandle, messages: number): Promise<void> {
  await migrateToLatest(database.db);
  const broker = await createBroker({ database });
  try {
    await benchAdapter(name, broker, messages);
  } finally {
    await broker.close();
  }
  print(
    `${name === "postgres adapter" ? "PostgreSQL" : "PGlite (in memory)"}, ${messages.toLocaleString("en")} messages`,
  );
}

if (testEnv.DATABASE_URL) {
  const scratch = await createScratchPostgres();
  const database = await openDatabase({ kind: "postgres", url: scratch.url, poolSize: 10 });
  try {
    await benchDatabase("postgres adapter", database, POSTGRES_MESSAGES);
  } finally {
    await database.close();
    await scratch.drop();
  }
} else {
  console.log("\nPostgreSQL skipped: DATABASE_URL is not set");
}

const pglite = await openDatabase({ kind: "pglite" });
try {
  await benchDatabase("pglite adapter", pglite, PGLITE_MESSAGES);
} finally {
  await pglite.close();
}
