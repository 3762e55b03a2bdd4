/**
 * Webhook ingest as the webhook and scaling benchmarks measure it: a flow of one
 * `transform` step, a load of deliveries, then the runs read back (see bench/webhooks.ts).
 */
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { SQL } from "bun";
import { cpuNow, cpuSpent, serverCpuSeconds } from "./cpu.ts";
import { type LoadResult, load } from "./load.ts";
import { callApi, type RunningPlatform } from "./platform.ts";

export interface IngestSettings {
  connections: number;
  seconds: number;
}

/** How long the runs may take to end after the load before the rest count as lost. */
const settleMs = (settings: IngestSettings) => settings.seconds * 6_000 + 30_000;

/** A Stripe-shaped event of about 1 KB with the given id. */
export function eventBody(id: string): string {
  const event = {
    id,
    object: "event",
    type: "payment_intent.succeeded",
    created: 1_795_000_000,
    data: { object: { id: `pi_${id}`, amount: 4200, currency: "eur", description: "" } },
  };
  event.data.object.description = "x".repeat(1024 - JSON.stringify(event).length);
  return JSON.stringify(event);
}

export interface Platform {
  platform: RunningPlatform;
  token: string;
}

export interface Flow {
  id: string;
  webhookUrl: string;
}

export async function createFlow(target: Platform, name: string, trigger: Record<string, unknown>): Promise<Flow> {
  const { data } = (await callApi(target.platform, target.token, "POST", "/flows", {
    name,
    trigger: { type: "webhook", response_mode: "acknowledge", ...trigger },
    steps: [{ name: "pick", subject: "transform", payload: { event: "{{trigger.id}}", type: "{{trigger.type}}" } }],
  })) as { data: { id: string; webhook: { id: string } } };
  return { id: data.id, webhookUrl: `${target.platform.url}/webhooks/${data.webhook.id}` };
}

interface RunSummary {
  id: string;
  status: string;
  created_at: string;
  finished_at: string | null;
}

/** Every run of a flow, newest first, page by page. */
async function runsOf(target: Platform, flow: Flow, status?: string, limit = 100): Promise<RunSummary[]> {
  const runs: RunSummary[] = [];
  let cursor: string | null = null;
  do {
    const query = new URLSearchParams({ limit: String(limit), ...(status ? { status } : {}) });
    if (cursor) query.set("cursor", cursor);
    const page = (await callApi(target.platform, target.token, "GET", `/flows/${flow.id}/runs?${query}`)) as {
      data: RunSummary[];
      next_cursor: string | null;
    };
    runs.push(...page.data);
    cursor = limit === 1 ? null : page.next_cursor;
  } while (cursor);
  return runs;
}

/** Waits until no run of the flow is queued or running, or until the time the runs may take is over. */
export async function awaitCompletion(target: Platform, flow: Flow, settings: IngestSettings): Promise<void> {
  const deadline = Date.now() + settleMs(settings);
  while (Date.now() < deadline) {
    const open = [...(await runsOf(target, flow, "queued", 1)), ...(await runsOf(target, flow, "running", 1))];
    if (open.length === 0) return;
    await Bun.sleep(250);
  }
}

export interface Ingest {
  load: LoadResult;
  answered: number;
  /** Runs per second from the first acceptance to the last finish. */
  completionsPerSecond: number;
  /** From the first acceptance to the last finish, in seconds. */
  windowSeconds: number;
  /** Answered run ids that did not end `succeeded`. */
  lost: number;
  /**
   * CPU time each platform process (and, in scale-out, PostgreSQL and Redis) spent per
   * answered webhook, in µs, from the load's start to the last run's end.
   */
  cpuPerWebhook: Record<string, number>;
  /** PostgreSQL's WAL per answered webhook, in bytes (scale-out only). */
  walBytes?: number;
  /** The database's growth per answered webhook, in bytes (embedded: its data directory's `base`, the tables and indexes). */
  databaseBytes?: number;
  /** Runs recorded for requests still in flight when the load stopped (their answers were not read): not lost, not counted as acknowledged. */
  unanswered: number;
}

/**
 * Delivers to the flow (to each of several flows in turn, which spreads their runs over the
 * run queue's partitions) for `settings.seconds`, then waits for the runs and reads them back.
 */
export async function ingest(
  target: Platform,
  flowOrFlows: Flow | Flow[],
  settings: IngestSettings,
  requests: {
    body?: string;
    bodyOf?: (n: number) => string;
    headersOf?: (n: number) => Record<string, string>;
    amount?: number;
  },
): Promise<Ingest> {
  const flows = Array.isArray(flowOrFlows) ? flowOrFlows : [flowOrFlows];
  const first = flows[0] as Flow;
  const paths = flows.map((flow) => new URL(flow.webhookUrl).pathname);
  const answered = new Set<string>();
  const { databaseUrl, dataDir } = target.platform;
  const server = databaseUrl ? await serverFigures(databaseUrl) : undefined;
  const tablesBefore = dataDir ? directoryBytes(join(dataDir, "base")) : undefined;
  const cpuBefore = cpuNow(target.platform.pids);
  const result = await load({
    url: first.webhookUrl,
    alsoUrls: target.platform.alsoUrls.map((url) => first.webhookUrl.replace(target.platform.url, url)),
    pathOf: flows.length > 1 ? (n) => paths[n % paths.length] as string : undefined,
    method: "POST",
    headers: { "content-type": "application/json" },
    body: requests.body,
    bodyOf: requests.bodyOf,
    headersOf: requests.headersOf,
    amount: requests.amount,
    connections: settings.connections,
    durationSeconds: settings.seconds,
    onResponse: (status, body) => {
      const runId = status === 200 ? /"run_id":"([^"]+)"/.exec(body)?.[1] : undefined;
      if (runId) answered.add(runId);
    },
  });
  for (const flow of flows) await awaitCompletion(target, flow, settings);
  const cpu = cpuSpent(target.platform.pids, cpuBefore);
  const serverAfter = databaseUrl ? await serverFigures(databaseUrl) : undefined;
  if (server && serverAfter) {
    cpu.postgres = serverAfter.postgresCpu - server.postgresCpu;
    cpu.redis = serverAfter.redisCpu - server.redisCpu;
    if (serverAfter.pgBouncerCpu > 0) cpu.pgbouncer = serverAfter.pgBouncerCpu - server.pgBouncerCpu;
  }
  const runs = (await Promise.all(flows.map((flow) => runsOf(target, flow)))).flat();
  const succeeded = new Set(runs.filter((run) => run.status === "succeeded").map((run) => run.id));
  let lost = 0;
  for (const id of answered) if (!succeeded.has(id)) lost++;
  let firstAccepted = Number.POSITIVE_INFINITY;
  let last = 0;
  for (const run of runs) {
    firstAccepted = Math.min(firstAccepted, Date.parse(run.created_at));
    if (run.finished_at) last = Math.max(last, Date.parse(run.finished_at));
  }
  return {
    load: result,
    answered: answered.size,
    completionsPerSecond: (succeeded.size / (last - firstAccepted)) * 1000,
    windowSeconds: (last - firstAccepted) / 1000,
    lost,
    cpuPerWebhook: Object.fromEntries(
      Object.entries(cpu).map(([role, seconds]) => [role, (seconds * 1e6) / Math.max(answered.size, 1)]),
    ),
    unanswered: runs.filter((run) => !answered.has(run.id)).length,
    ...(server && serverAfter
      ? {
          walBytes: Number(serverAfter.wal - server.wal) / Math.max(answered.size, 1),
          databaseBytes: (serverAfter.databaseBytes - server.databaseBytes) / Math.max(answered.size, 1),
        }
      : {}),
    ...(dataDir && tablesBefore !== undefined
      ? { databaseBytes: (directoryBytes(join(dataDir, "base")) - tablesBefore) / Math.max(answered.size, 1) }
      : {}),
  };
}

/** The bytes of the files under `directory`. */
function directoryBytes(directory: string): number {
  let bytes = 0;
  for (const entry of readdirSync(directory, { recursive: true, withFileTypes: true }))
    if (entry.isFile()) bytes += statSync(join(entry.parentPath, entry.name)).size;
  return bytes;
}

/** The servers' CPU so far, PostgreSQL's WAL position and the benchmark database's size. */
export async function serverFigures(databaseUrl: string) {
  const sql = new SQL(databaseUrl);
  try {
    const [row] =
      await sql`select pg_current_wal_insert_lsn() - '0/0'::pg_lsn as wal, pg_database_size(current_database()) as size`;
    return {
      postgresCpu: serverCpuSeconds("postgres"),
      redisCpu: serverCpuSeconds("redis-server"),
      pgBouncerCpu: serverCpuSeconds("pgbouncer"),
      wal: BigInt(row.wal),
      databaseBytes: Number(row.size),
    };
  } finally {
    await sql.close();
  }
}
