import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { redisClusterMissing, sharedLocalRedisCluster, startLocalRedisCluster } from "@platform/core/testing";
import { type DatabaseHandle, openDatabase } from "@platform/db";
import { createScratchPostgres, freeLoopbackPort, testEnv } from "@platform/db/testing";
import type { Server, Subprocess } from "bun";
import { sql } from "kysely";
import { PASSWORD, uniqueEmail } from "./accounts-helpers.ts";

/**
 * The platform as real processes for the crash and outage tests: an API in scale-out mode
 * and workers, started and killed one by one, on a scratch PostgreSQL database of their
 * own and the Redis the test names.
 */
const root = join(import.meta.dir, "..", "..", "..");

export interface Child {
  name: string;
  process: Subprocess;
}

type ScratchDatabase = Awaited<ReturnType<typeof createScratchPostgres>>;

export class PlatformProcesses {
  readonly api: string;
  /** The deployment's database, for what a test reads of it; dropped by `stop`. */
  readonly database: DatabaseHandle;
  private readonly children: Child[] = [];
  private readonly env: Record<string, string>;

  private constructor(
    port: number,
    private readonly scratch: ScratchDatabase,
    database: DatabaseHandle,
    settings: { redisUrl: string; env?: Record<string, string> },
  ) {
    this.api = `http://127.0.0.1:${port}`;
    this.database = database;
    this.env = {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "",
      NODE_ENV: "production",
      LOG_LEVEL: "error",
      PORT: String(port),
      HOST: "127.0.0.1",
      PUBLIC_URL: this.api,
      DATABASE_URL: scratch.url,
      REDIS_URL: settings.redisUrl,
      BROKER_NAMESPACE: `proc-${randomBytes(4).toString("hex")}`,
      JWT_SIGNING_KEYS: `proc:${randomBytes(32).toString("base64url")}`,
      SECRETS_KEY: randomBytes(32).toString("base64url"),
      WORKER_HEALTH_PORT: "0",
      HTTP_REQUEST_ALLOWED_NETWORKS: "127.0.0.1",
      PASSWORD_HASH_MEMORY_KIB: "19456",
      ...settings.env,
    };
  }

  /** Makes a scratch database (DATABASE_URL's server), starts the API (scale-out) on it and waits until it is ready. */
  static async start(settings: { redisUrl: string; env?: Record<string, string> }): Promise<PlatformProcesses> {
    const scratch = await createScratchPostgres();
    const database = await openDatabase({ kind: "postgres", url: scratch.url, poolSize: 2 });
    const platform = new PlatformProcesses(await freeLoopbackPort(), scratch, database, settings);
    platform.spawn("api", ["apps/api/src/main.ts", "--mode=scale-out"]);
    try {
      await platform.until("the API to be ready", () =>
        fetch(`${platform.api}/readyz`).then(
          (r) => (r.ok ? true : undefined),
          () => undefined,
        ),
      );
    } catch (error) {
      await platform.stop();
      throw error;
    }
    return platform;
  }

  /** The API's process, for a test that kills it. */
  apiProcess(): Child {
    const api = this.children.find((child) => child.name === "api");
    if (!api) throw new Error("the API was not started");
    return api;
  }

  worker(name: string): Child {
    return this.spawn(name, ["apps/worker/src/main.ts"]);
  }

  async kill(child: Child): Promise<void> {
    child.process.kill("SIGKILL");
    await child.process.exited;
  }

  /**
   * Polls `probe` until it answers something; fails at once if a child exits by itself
   * meanwhile, and after `timeoutMs` (a bound on a hang, not a timed assertion).
   */
  async until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 120_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
      for (const child of this.children) {
        if (child.process.exitCode !== null && child.process.signalCode === null) {
          throw new Error(`${child.name} exited with ${child.process.exitCode} while waiting for ${what}`);
        }
      }
      const found = await probe();
      if (found !== undefined) return found;
      await Bun.sleep(100);
    }
  }

  /** Kills every process, then drops the database. */
  async stop(): Promise<void> {
    for (const child of this.children) child.process.kill("SIGKILL");
    await Promise.all(this.children.map((child) => child.process.exited));
    await this.database.close();
    await this.scratch.drop();
  }

  /** A JSON request to the API, as the bearer of `token` when given: its status and body. */
  async request(
    method: string,
    path: string,
    body: unknown,
    token?: string,
  ): Promise<{ status: number; body: { data?: unknown; [field: string]: unknown } }> {
    const response = await fetch(`${this.api}${path}`, {
      method,
      headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  }

  /** Signs a new account up; answers its owner's token. */
  async signUp(tag: string): Promise<string> {
    const signedUp = await this.request("POST", "/accounts/signup", {
      email: uniqueEmail(tag),
      password: PASSWORD,
      account_name: tag,
    });
    if (signedUp.status !== 200) throw new Error(`sign-up: ${signedUp.status} ${JSON.stringify(signedUp.body)}`);
    return (signedUp.body.data as { auth_token: string }).auth_token;
  }

  /** Signs up and creates a flow with a public, acknowledge-mode webhook; answers the token and the flow. */
  async flow(steps: unknown[]): Promise<{ token: string; flowId: string; webhookUrl: string }> {
    const token = await this.signUp("durability");
    const created = await this.request(
      "POST",
      "/flows",
      { name: "durability", trigger: { type: "webhook", access: "public", response_mode: "acknowledge" }, steps },
      token,
    );
    if (created.status !== 200) throw new Error(`POST /flows: ${created.status} ${JSON.stringify(created.body)}`);
    const data = created.body.data as { id: string; webhook: { id: string } };
    return { token, flowId: data.id, webhookUrl: `${this.api}/webhooks/${data.webhook.id}` };
  }

  private spawn(name: string, command: string[]): Child {
    const child = {
      name,
      process: Bun.spawn(["bun", ...command], { cwd: root, env: this.env, stdout: "ignore", stderr: "inherit" }),
    };
    this.children.push(child);
    return child;
  }
}

/** A run's step records by name (their outputs left out), as a column of a query on `runs`. */
export const stepRecordsColumn = sql<Record<string, { attempts: { error?: string }[] }> | null>`(
  select jsonb_object_agg(s.name, s.record) from run_steps as s where s.run_id = runs.id)`.as("steps");

/**
 * Waits until the flow has `count` runs and every one has ended; answers them with their
 * steps and trigger data.
 */
export function endedRuns(platform: PlatformProcesses, flowId: string, count: number) {
  return platform.until(`${count} runs to end`, async () => {
    const rows = await platform.database.db
      .selectFrom("runs")
      .select(["id", "status", "trigger", "error", stepRecordsColumn])
      .where("flow_id", "=", flowId)
      .execute();
    return rows.length === count && rows.every((row) => row.status === "succeeded" || row.status === "failed")
      ? rows
      : undefined;
  });
}

/** How many attempts of the run's step `step` a worker's death interrupted (on record as `interrupted`). */
export function interruptedAttempts(
  run: { steps: Record<string, { attempts: { error?: string }[] }> | null },
  step: string,
): number {
  const attempts = run.steps?.[step]?.attempts ?? [];
  return attempts.filter((attempt) => attempt.error?.startsWith("interrupted")).length;
}

/** One webhook delivery's answer. */
export interface Delivered {
  n: number;
  status: number;
  retryAfter: string | null;
  body: { message?: string; run_id?: string | null; error?: string };
}

/** Posts `{n}` to a webhook URL. */
export async function deliver(webhookUrl: string, n: number): Promise<Delivered> {
  const response = await fetch(webhookUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ n }),
  });
  const body = (await response.json()) as Delivered["body"];
  return { n, status: response.status, retryAfter: response.headers.get("retry-after"), body };
}

/** Delivers every n of `ns`, `concurrency` at a time; answers in the order of `ns`. */
export async function deliverAll(
  webhookUrl: string,
  ns: number[],
  concurrency: number,
  send: (url: string, n: number) => Promise<Delivered> = deliver,
): Promise<Delivered[]> {
  const answers: Delivered[] = new Array(ns.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < ns.length) {
        const i = next++;
        answers[i] = await send(webhookUrl, ns[i] as number);
      }
    }),
  );
  return answers;
}

/**
 * The outside world a flow's `http.request` step calls: it counts the requests per `n`
 * (`/hit/<n>`), the side effect the tests count, and holds them open while its gate is shut.
 */
export class CountingUpstream {
  readonly hits = new Map<number, number>();
  /** Requests waiting at the gate. */
  held = 0;
  private server: Server<undefined>;
  private opened!: () => void;
  private readonly gate = new Promise<void>((resolve) => {
    this.opened = resolve;
  });

  constructor(shut: boolean) {
    if (!shut) this.open();
    this.server = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      idleTimeout: 0,
      fetch: async (request) => {
        const n = Number(new URL(request.url).pathname.split("/").at(-1));
        this.hits.set(n, (this.hits.get(n) ?? 0) + 1);
        this.held++;
        await this.gate;
        this.held--;
        return Response.json({ n });
      },
    });
  }

  /** The flow step that calls this upstream once per run. */
  step() {
    return {
      name: "notify",
      subject: "http.request",
      payload: { url: `http://127.0.0.1:${this.server.port}/hit/{{trigger.n}}`, timeout: 600_000 },
      options: { timeout: 600_000 },
    };
  }

  open(): void {
    this.opened();
  }

  stop(): void {
    this.open();
    this.server.stop(true);
  }
}

/** A Redis of the test's own, without persistence (as on this machine and in CI): a restart loses everything. */
export class PrivateRedis {
  private server: Subprocess | undefined;

  private constructor(readonly port: number) {}

  static async start(): Promise<PrivateRedis> {
    const redis = new PrivateRedis(await freeLoopbackPort());
    await redis.restart();
    return redis;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Starts it (again, empty) and waits until it answers. */
  async restart(): Promise<void> {
    const binary = Bun.which("redis-server");
    if (!binary) throw new Error("redis-server is not installed");
    this.server = Bun.spawn(
      [binary, "--port", String(this.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
      { stdout: "ignore", stderr: "ignore" },
    );
    while (!(await this.answers())) await Bun.sleep(20);
  }

  async kill(): Promise<void> {
    this.server?.kill("SIGKILL");
    await this.server?.exited;
  }

  private async answers(): Promise<boolean> {
    try {
      const { promise, resolve } = Promise.withResolvers<boolean>();
      const socket = await Bun.connect({
        hostname: "127.0.0.1",
        port: this.port,
        socket: {
          data: (_socket, data) => resolve(data.toString().startsWith("+PONG")),
          close: () => resolve(false),
          error: () => resolve(false),
        },
      });
      socket.write("PING\r\n");
      const answered = await promise;
      socket.end();
      return answered;
    } catch {
      return false;
    }
  }
}

/** A Redis of the test's own that can lose everything: one server, or a whole cluster. */
export interface LosableRedis {
  url: string;
  /** Kills it (every node): all its data is gone. */
  kill(): Promise<void>;
  /** Starts it again, empty, at the same address. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * The Redis deployments the crash and loss suites run on: one server, and a Redis Cluster
 * of three primaries with a replica each, with the run queue in 16 partitions as the
 * docs suggest there. `own` starts one the suite may kill; `shared` names one it may not.
 */
export function redisDeployments(): {
  label: string;
  /** Why `own` cannot run here, or false. */
  skipOwn: string | false;
  /** Why `shared` cannot run here, or false. */
  skipShared: string | false;
  /** Settings the platform's processes need on it. */
  env: Record<string, string>;
  own(): Promise<LosableRedis>;
  shared(): Promise<string>;
}[] {
  const noServer = Bun.which("redis-server") ? false : "redis-server is not installed";
  return [
    {
      label: "one Redis",
      skipOwn: noServer,
      skipShared: testEnv.REDIS_URL ? false : "REDIS_URL is not set",
      env: {},
      async own() {
        const redis = await PrivateRedis.start();
        return { url: redis.url, kill: () => redis.kill(), restart: () => redis.restart(), stop: () => redis.kill() };
      },
      shared: async () => testEnv.REDIS_URL as string,
    },
    {
      label: "a Redis Cluster",
      skipOwn: redisClusterMissing(),
      skipShared: redisClusterMissing(),
      env: { RUN_QUEUE_PARTITIONS: "16" },
      async own() {
        const cluster = await startLocalRedisCluster();
        return {
          url: cluster.url,
          kill: () => cluster.loseEverything(),
          restart: () => cluster.startEmpty(),
          stop: () => cluster.stop(),
        };
      },
      shared: async () => (await sharedLocalRedisCluster()).url,
    },
  ];
}
