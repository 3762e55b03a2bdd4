import { afterAll, beforeAll, describe } from "bun:test";
import { randomBytes } from "node:crypto";
import {
  type CoreConfig,
  coreConfigSchema,
  createLogger,
  createServices,
  platformConsumers,
  platformJobs,
  type Services,
  startWorkerRuntime,
  toCoreConfig,
  type WorkerRuntime,
} from "@platform/core";
import { redisClusterMissing, sharedLocalRedisCluster } from "@platform/core/testing";
import type { DatabaseHandle } from "@platform/db";
import { databaseBackends, openTestDatabase, pgBouncerMissing, type TestBackend, testEnv } from "@platform/db/testing";
import { type RunningServer, startServer } from "../src/server.ts";

export interface TestApiOptions {
  /** Database backend; the Postgres broker adapter runs on it unless `redis` is set. */
  backend: TestBackend;
  /** The Redis adapter on REDIS_URL (`true`) or on the test process's local Redis Cluster (`"cluster"`). */
  redis?: RedisChoice;
  maxBodyBytes?: number;
  /** Reverse proxies the server believes X-Forwarded-For from (TRUSTED_PROXY_HOPS). */
  trustedProxyHops?: number;
  /** Settings as environment variables (e.g. `LOGIN_FAILURES_PER_PAIR`), over the test defaults. */
  env?: Record<string, string>;
  /** Keeps the server's log lines from this level up, for `logs()`; unset, nothing is logged. */
  captureLogs?: "trace" | "debug" | "info";
  /** Runs the platform's worker (consumers and periodic jobs) in the server's process, as embedded mode does. */
  worker?: boolean;
  /** The console build to serve (default: apps/web/dist, which a test must not rely on). */
  consoleDir?: string;
  /** Seconds a connection may stay silent (default: Bun's 10). */
  idleTimeoutSeconds?: number;
  /** The port to listen on (default: any free one). */
  port?: number;
}

export interface TestApi {
  url: string;
  services: Services;
  /** What a second process of the same deployment shares with this one (see `startPeerApi`). */
  shared: {
    database: DatabaseHandle;
    config: CoreConfig;
    maxBodyBytes: number;
    trustedProxyHops?: number;
    consoleDir?: string;
    idleTimeoutSeconds?: number;
  };
  /** `fetch` against the running server, with a JSON body when `json` is given. */
  request(path: string, init?: RequestInit & { json?: unknown }): Promise<Response>;
  /** The log output so far (one JSON object per line), when started with `captureLogs`. */
  logs(): string;
  /** The in-process worker, when started with `worker: true`. */
  worker?: WorkerRuntime;
  stop(): Promise<void>;
}

/** No Redis, the one at REDIS_URL, or a local Redis Cluster. */
export type RedisChoice = boolean | "cluster";

/** One way of running the platform a suite is repeated on. */
export interface Variant {
  backend: TestBackend;
  redis: RedisChoice;
  label: string;
  /** Why it does not run here, or false. */
  skip: string | false;
}

/**
 * Every database backend twice, with the broker on the database's own adapter and on
 * Redis, for suites where the broker matters; `skip` says why a variant does not run.
 */
export function brokerVariants(): Variant[] {
  return databaseBackends().flatMap(({ backend, skip }) => [
    { backend, redis: false, label: backend, skip },
    {
      backend,
      redis: true,
      label: `${backend} + redis`,
      skip: skip || (testEnv.REDIS_URL ? false : "REDIS_URL is not set"),
    },
  ]);
}

/** What a suite's tests call: its server, there from the suite's `beforeAll` on, and the backend it runs on. */
export interface ServerSuite {
  api: TestApi;
  backend: TestBackend;
}

/**
 * A suite against one server, once per database backend (PGlite, PostgreSQL; skipped, saying
 * why, where one is missing), for suites where the broker does not matter: the server starts
 * before the suite's tests and stops after them.
 */
export function describeOnEachDatabase(
  title: string,
  options: Omit<TestApiOptions, "backend">,
  body: (suite: ServerSuite) => void,
): void {
  for (const { backend, skip } of databaseBackends()) {
    describe.skipIf(Boolean(skip))(`${title} on ${backend}${skip ? ` (skipped: ${skip})` : ""}`, () => {
      const suite = { backend } as ServerSuite;
      beforeAll(async () => {
        suite.api = await startTestApi({ ...options, backend });
      }, 60_000);
      afterAll(() => suite.api?.stop());
      body(suite);
    });
  }
}

/**
 * The two ways the platform runs: embedded (PGlite, the broker on it) and scale-out
 * (PostgreSQL and Redis), for suites that need the real combinations rather than all four.
 */
export function runModes(): Variant[] {
  return brokerVariants().filter((variant) => (variant.backend === "pglite") !== variant.redis);
}

/**
 * Scale-out past one host, for the suites that must hold there too (runs and webhooks):
 * behind a transaction-pooling PgBouncer (the queries through it; migrations and LISTEN
 * straight to the server), and on a Redis Cluster of three primaries with a replica each.
 */
export async function pastOneHostVariants(): Promise<Variant[]> {
  const noDatabase = testEnv.DATABASE_URL ? false : "DATABASE_URL is not set";
  return [
    {
      backend: "pgbouncer",
      redis: true,
      label: "postgres through pgbouncer + redis",
      skip: (await pgBouncerMissing()) || (testEnv.REDIS_URL ? false : "REDIS_URL is not set"),
    },
    {
      backend: "postgres",
      redis: "cluster",
      label: "postgres + redis cluster",
      skip: noDatabase || redisClusterMissing(),
    },
  ];
}

/**
 * Each broker adapter on a real backend: the PostgreSQL adapter on PGlite (embedded) and
 * on PostgreSQL, and the Redis adapter beside PostgreSQL (scale-out), for suites where the
 * broker does the work (storage, monitoring).
 */
export function adapterVariants(): Variant[] {
  return brokerVariants().filter((variant) => !(variant.backend === "pglite" && variant.redis));
}

/** The real API on a real port, on a fresh database of its own. */
export async function startTestApi(options: TestApiOptions): Promise<TestApi> {
  const database = await openTestDatabase(options.backend);
  const config = toCoreConfig(
    coreConfigSchema.parse({
      LOG_LEVEL: "silent",
      REDIS_URL:
        options.redis === "cluster"
          ? (await sharedLocalRedisCluster()).url
          : options.redis
            ? testEnv.REDIS_URL
            : undefined,
      // Keys of its own, so no test writes one into ./data.
      JWT_SIGNING_KEYS: `test:${randomBytes(32).toString("base64url")}`,
      SECRETS_KEY: randomBytes(32).toString("base64url"),
      // Redis outlives test runs: each server keeps to a namespace of its own.
      BROKER_NAMESPACE: `test-${randomBytes(6).toString("hex")}`,
      // Every test request comes from 127.0.0.1: sign-in limits stay out of the way
      // unless a test sets them.
      LOGIN_FAILURES_PER_PAIR: "1000000",
      LOGIN_FAILURES_PER_IP: "1000000",
      LOGIN_FAILURES_PER_EMAIL: "1000000",
      // The cheapest argon2id the settings allow: the suites sign up hundreds of users.
      PASSWORD_HASH_MEMORY_KIB: "19456",
      // No test reaches the public MCP registry: suites that need one start a stand-in.
      MCP_REGISTRY_URL: "http://127.0.0.1:9",
      // On a cluster, the run queue as the docs suggest there: in partitions spread over the shards.
      ...(options.redis === "cluster" ? { RUN_QUEUE_PARTITIONS: "16" } : {}),
      ...options.env,
    }),
  );
  const api = await serve(
    {
      database,
      config,
      maxBodyBytes: options.maxBodyBytes ?? 10 * 1024 * 1024,
      trustedProxyHops: options.trustedProxyHops,
      consoleDir: options.consoleDir,
      idleTimeoutSeconds: options.idleTimeoutSeconds,
    },
    options.captureLogs,
    options.worker,
    options.port,
  );
  return {
    ...api,
    async stop() {
      await api.stop();
      await database.close();
    },
  };
}

/**
 * A second API process of the same deployment as `first`: the same database, broker
 * namespace and keys, but services of its own (its own broker connections, auth cache and
 * metrics). Stop it before `first`.
 */
export function startPeerApi(first: TestApi): Promise<TestApi> {
  return serve(first.shared);
}

async function serve(
  shared: TestApi["shared"],
  captureLogs?: TestApiOptions["captureLogs"],
  worker = false,
  port = 0,
): Promise<TestApi> {
  const logLines: string[] = [];
  const logger = createLogger({
    level: captureLogs ?? "silent",
    name: "api-test",
    destination: { write: (line: string) => logLines.push(line) },
  });
  // The services close what they were given; the database belongs to the first server's test.
  const borrowed: DatabaseHandle = { ...shared.database, close: async () => {} };
  const handle = await createServices(shared.config, logger, borrowed);
  let server: RunningServer;
  try {
    server = startServer(handle.services, {
      port,
      host: "127.0.0.1",
      maxBodyBytes: shared.maxBodyBytes,
      trustedProxyHops: shared.trustedProxyHops,
      consoleDir: shared.consoleDir,
      idleTimeoutSeconds: shared.idleTimeoutSeconds,
    });
  } catch (error) {
    await handle.close();
    throw error;
  }
  const runtime = worker
    ? startWorkerRuntime({
        broker: handle.services.broker,
        logger,
        consumers: platformConsumers(handle.services),
        jobs: platformJobs(handle.services),
        jobCheckMs: 200,
        pollMs: 200,
        concurrency: 2,
      })
    : undefined;
  return {
    url: server.url,
    services: handle.services,
    shared,
    worker: runtime,
    request(path, init = {}) {
      const { json, ...rest } = init;
      const headers = new Headers(rest.headers);
      if (json !== undefined) headers.set("content-type", "application/json");
      return fetch(`${server.url}${path}`, {
        ...rest,
        headers,
        body: json !== undefined ? JSON.stringify(json) : rest.body,
      });
    },
    logs: () => logLines.join(""),
    async stop() {
      await runtime?.stop(1000);
      await server.stop(1000);
      await handle.close();
    },
  };
}
