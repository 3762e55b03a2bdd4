import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { addRunPartitions, openDatabase } from "../../packages/db/src/index.ts";
import { startPgBouncer } from "../../packages/db/src/pgbouncer.ts";
import { createScratchPostgres, freeLoopbackPort, testEnv } from "../../packages/db/src/testing.ts";
import { flag, listFlag } from "./args.ts";

export type Mode = "embedded" | "scale-out";

export interface RunningPlatform {
  mode: Mode;
  url: string;
  /** The other API processes' addresses, when it runs more than one (see `Shape`). */
  alsoUrls: string[];
  /** Scale-out: its PostgreSQL database. */
  databaseUrl?: string;
  /** Embedded: its PGlite data directory. */
  dataDir?: string;
  /**
   * Process ids by role: `api` (which runs the worker too in embedded mode) and, in
   * scale-out, `worker`; with more than one of either, `api 2`, `worker 2`, ...
   */
  pids: Record<string, number>;
  stop(): Promise<void>;
}

const root = join(import.meta.dir, "..", "..");

/**
 * `--partition-days N` (scale-out): the day partitions of runs are made up to N days ahead
 * before a benchmark starts, as a deployment has them once it is N − 7 days old (its
 * retention's days, and the week its worker makes ahead); absent, the worker's week alone.
 * Statements that cannot tell which partitions they need are planned over all of them.
 */
export const PARTITION_DAYS = Bun.argv.includes("--partition-days") ? flag("partition-days", 7) : null;

/** Makes the day partitions of runs PARTITION_DAYS ahead on a scale-out platform's database (none asked: nothing). */
export async function addPartitionsAhead(databaseUrl: string | undefined): Promise<void> {
  if (PARTITION_DAYS === null || databaseUrl === undefined) return;
  const database = await openDatabase({ kind: "postgres", url: databaseUrl, poolSize: 1 });
  try {
    await addRunPartitions(database.db, Date.now() + PARTITION_DAYS * 86_400_000);
  } finally {
    await database.close();
  }
}
const key = () => randomBytes(32).toString("base64url");

/** The modes this machine can run: scale-out needs DATABASE_URL and REDIS_URL. */
export function availableModes(): Mode[] {
  return testEnv.DATABASE_URL && testEnv.REDIS_URL ? ["embedded", "scale-out"] : ["embedded"];
}

/** `--modes embedded,scale-out`: those of the modes named that this machine can run; absent, every one it can. */
export function modesFlag(): Mode[] {
  const named = listFlag("modes", availableModes());
  return availableModes().filter((mode) => named.includes(mode));
}

async function waitReady(url: string, processes: Subprocess[]): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    for (const child of processes) {
      if (child.exitCode !== null) throw new Error(`a platform process exited with ${child.exitCode}`);
    }
    const ok = await fetch(`${url}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    await Bun.sleep(200);
  }
  throw new Error(`${url} was not ready within 60 s`);
}

/** Rates high enough that no benchmark meets them. */
const BENCH_RATES = { runs_per_minute: 100_000_000, webhook_deliveries_per_second: 1_000_000 };

/** How a scale-out deployment is laid out: its processes, the Redis it uses (default REDIS_URL), and whether a PgBouncer pools its queries. */
export interface Shape {
  apis?: number;
  workers?: number;
  redisUrl?: string;
  /** DATABASE_URL through a transaction-pooling PgBouncer started for it, DATABASE_DIRECT_URL to the server. */
  pgBouncer?: boolean;
}

/**
 * Starts the platform as its README says, as real processes: `bun run start` (embedded,
 * PGlite in a fresh data directory), or `start:api` + `start:worker` on a scratch
 * PostgreSQL database and a Redis namespace of its own (as many of each as `shape` says,
 * each API on a port of its own). Production settings, no logs.
 */
export async function startPlatform(
  mode: Mode,
  extraEnv: Record<string, string> = {},
  shape: Shape = {},
): Promise<RunningPlatform> {
  const port = await freeLoopbackPort();
  // A benchmark measures what the platform does, not its plans' rates: one flow here takes
  // more deliveries a second than the free plan lets it (the checks still run, under these).
  const planLimitsFile = join(tmpdir(), `platform-bench-plans-${port}.json`);
  writeFileSync(planLimitsFile, JSON.stringify({ free: BENCH_RATES }));
  const url = `http://127.0.0.1:${port}`;
  const base = {
    ...process.env,
    NODE_ENV: "production",
    LOG_LEVEL: "silent",
    PORT: String(port),
    HOST: "127.0.0.1",
    PUBLIC_URL: url,
    // A benchmark signs in and out far more often than a person would.
    LOGIN_FAILURES_PER_PAIR: "1000000",
    LOGIN_FAILURES_PER_IP: "1000000",
    LOGIN_FAILURES_PER_EMAIL: "1000000",
    // No benchmark reaches the public MCP registry; bench/registry.ts starts a stand-in.
    MCP_REGISTRY_URL: "http://127.0.0.1:9",
    PLAN_LIMITS_FILE: planLimitsFile,
    ...extraEnv,
  };
  if (mode === "embedded") {
    const dataDir = mkdtempSync(join(tmpdir(), "platform-bench-"));
    const env: Record<string, string | undefined> = { ...base, DATA_DIR: dataDir };
    delete env.DATABASE_URL;
    delete env.REDIS_URL;
    const api = Bun.spawn(["bun", "apps/api/src/main.ts", "--mode=embedded"], {
      cwd: root,
      env,
      stdout: "ignore",
      stderr: "inherit",
    });
    await waitReady(url, [api]);
    return {
      mode,
      url,
      alsoUrls: [],
      dataDir,
      pids: { api: api.pid },
      async stop() {
        api.kill("SIGTERM");
        await api.exited;
        rmSync(dataDir, { recursive: true, force: true });
        rmSync(planLimitsFile, { force: true });
      },
    };
  }
  const scratch = await createScratchPostgres();
  const bouncer = shape.pgBouncer ? await startPgBouncer(scratch.url, await freeLoopbackPort()) : undefined;
  const env = {
    ...base,
    DATABASE_URL: bouncer ? bouncer.through(scratch.url) : scratch.url,
    ...(bouncer ? { DATABASE_DIRECT_URL: scratch.url } : {}),
    REDIS_URL: shape.redisUrl ?? testEnv.REDIS_URL,
    JWT_SIGNING_KEYS: `bench:${key()}`,
    SECRETS_KEY: key(),
    BROKER_NAMESPACE: `bench-${randomBytes(4).toString("hex")}`,
    WORKER_HEALTH_PORT: "0",
  };
  const named = (role: string, i: number) => (i === 0 ? role : `${role} ${i + 1}`);
  const children: [string, Subprocess][] = [];
  const urls: string[] = [];
  // The first API migrates the database; the others start once it is ready.
  for (let i = 0; i < (shape.apis ?? 1); i++) {
    const apiPort = i === 0 ? port : await freeLoopbackPort();
    const apiUrl = `http://127.0.0.1:${apiPort}`;
    const api = Bun.spawn(["bun", "apps/api/src/main.ts", "--mode=scale-out"], {
      cwd: root,
      env: { ...env, PORT: String(apiPort) },
      stdout: "ignore",
      stderr: "inherit",
    });
    children.push([named("api", i), api]);
    urls.push(apiUrl);
    await waitReady(apiUrl, [api]);
  }
  for (let i = 0; i < (shape.workers ?? 1); i++) {
    const worker = Bun.spawn(["bun", "apps/worker/src/main.ts"], {
      cwd: root,
      env,
      stdout: "ignore",
      stderr: "inherit",
    });
    children.push([named("worker", i), worker]);
  }
  await addPartitionsAhead(scratch.url);
  return {
    mode,
    url,
    alsoUrls: urls.slice(1),
    databaseUrl: scratch.url,
    pids: Object.fromEntries(children.map(([role, child]) => [role, child.pid])),
    async stop() {
      for (const [, child] of children) child.kill("SIGTERM");
      await Promise.all(children.map(([, child]) => child.exited));
      await bouncer?.stop();
      await scratch.drop();
      rmSync(planLimitsFile, { force: true });
    },
  };
}

/** A trivial `Bun.serve` answering 200 `{"ok":true}`, in a process of its own like the platform. */
export async function startBaseline(): Promise<{ url: string; stop(): Promise<void> }> {
  const port = await freeLoopbackPort();
  const child = Bun.spawn(
    [
      "bun",
      "-e",
      `Bun.serve({ port: ${port}, hostname: "127.0.0.1", fetch: () => Response.json({ ok: true }) }); setInterval(() => {}, 1 << 30);`,
    ],
    { stdout: "ignore", stderr: "inherit" },
  );
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 100; i++) {
    if (
      await fetch(url).then(
        (r) => r.ok,
        () => false,
      )
    )
      break;
    await Bun.sleep(50);
  }
  return {
    url,
    async stop() {
      child.kill();
      await child.exited;
    },
  };
}

/** Signs up a fresh account on a running platform; returns its token and account id. */
export async function signUpForBench(url: string): Promise<{ token: string; accountId: string; email: string }> {
  const email = `bench-${randomBytes(4).toString("hex")}@example.com`;
  const response = await fetch(`${url}/accounts/signup`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email, password: "correct horse battery staple", account_name: "bench" }),
  });
  if (!response.ok) throw new Error(`sign-up failed: ${response.status} ${await response.text()}`);
  const { data } = (await response.json()) as { data: { auth_token: string; account: { id: string } } };
  return { token: data.auth_token, accountId: data.account.id, email };
}

/** A JSON call to the platform's API with the benchmark account's token; anything but a 2xx throws, with the answer. */
export async function callApi(platform: RunningPlatform, token: string, method: string, path: string, body?: unknown) {
  const response = await fetch(`${platform.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return text ? JSON.parse(text) : null;
}
