import { randomBytes } from "node:crypto";
import type { DatabaseHandle } from "@platform/db";
import { openTestDatabase, testEnv } from "@platform/db/testing";
import { createBroker } from "./index.ts";
import type { Broker, BrokerKind } from "./port.ts";
import { redisClusterMissing, sharedLocalRedisCluster } from "./redis/local-cluster.ts";

/** A broker for tests, with the database it may stand on; `close` releases both. */
export interface TestBroker {
  broker: Broker;
  /** Another broker on the same backend, as a second process would have (shares PGlite's handle). */
  openPeer(): Promise<Broker>;
  close(): Promise<void>;
}

export interface BrokerBackend {
  name: "pglite" | "postgres" | "redis" | "redis-cluster";
  kind: BrokerKind;
  /** Why this backend is not tested in this run, or false. */
  skip: string | false;
  open(): Promise<TestBroker>;
}

/** Every backend the broker contract runs on, with the reason for each one skipped. */
export function brokerBackends(): BrokerBackend[] {
  return [
    { name: "pglite", kind: "postgres", skip: false, open: () => onDatabase("pglite") },
    {
      name: "postgres",
      kind: "postgres",
      skip: testEnv.DATABASE_URL ? false : "DATABASE_URL is not set",
      open: () => onDatabase("postgres"),
    },
    {
      name: "redis",
      kind: "redis",
      skip: testEnv.REDIS_URL ? false : "REDIS_URL is not set",
      open: () => onRedis(testEnv.REDIS_URL as string),
    },
    {
      name: "redis-cluster",
      kind: "redis",
      skip: redisClusterMissing(),
      open: async () => onRedis((await sharedLocalRedisCluster()).url),
    },
  ];
}

async function onDatabase(backend: "pglite" | "postgres"): Promise<TestBroker> {
  const database = await openTestDatabase(backend);
  const broker = await createBroker({ database });
  const peers: Broker[] = [];
  return {
    broker,
    async openPeer() {
      const peer = await createBroker({ database });
      peers.push(peer);
      return peer;
    },
    async close() {
      for (const peer of peers) await peer.close();
      await broker.close();
      await database.close();
    },
  };
}

async function onRedis(redisUrl: string): Promise<TestBroker> {
  // The Redis adapter never touches the database; a handle that refuses every use proves it.
  const database = new Proxy({} as DatabaseHandle, {
    get: (_, property) => {
      throw new Error(`the Redis broker used the database (${String(property)})`);
    },
  });
  const broker = await createBroker({ redisUrl, database });
  const peers: Broker[] = [];
  return {
    broker,
    async openPeer() {
      const peer = await createBroker({ redisUrl, database });
      peers.push(peer);
      return peer;
    },
    async close() {
      for (const peer of peers) await peer.close();
      await broker.close();
    },
  };
}

/** A scope no other test or run uses. */
export function randomScope(prefix = "test"): string {
  return `${prefix}-${randomBytes(6).toString("hex")}`;
}

/** Waits until `check` passes (it may throw or return false meanwhile). */
export async function eventually(check: () => boolean | Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let passed = false;
    try {
      passed = await check();
    } catch (error) {
      if (Date.now() > deadline) throw error;
    }
    if (passed) return;
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await Bun.sleep(20);
  }
}
