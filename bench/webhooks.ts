/**
 * Webhook ingress in acknowledge mode (issue 9's target, scale-out: ≥ 5,000 webhooks/s
 * acknowledged and completed, p99 acknowledge ≤ 25 ms, none lost), in both modes, next to
 * a trivial `Bun.serve` measured in the same run.
 *
 *   bun bench/webhooks.ts [--seconds N] [--connections N]
 *
 * Each delivery is a 1 KB JSON event sent to a flow of one `transform` step, with public
 * access (the same event every time: nothing de-duplicates it), and signed for Stripe, with
 * an `id` of its own per delivery since the ingress de-duplicates by the Stripe event id
 * (signatures made beforehand by Stripe's own library, so the load generator spends nothing
 * on them). Each kind is measured on a platform started for it (`--kinds public,stripe`
 * picks), so that neither pays for the other's backlog or warms the processes for it;
 * `--stripe-rate N` (default 8,000) signed deliveries are made per second of load.
 * `--tree DIR` measures the platform of another source tree (a `git worktree` of an older
 * commit, with `bun install` run there), started by that tree's `bench/lib/platform.ts`.
 *
 * Every run id a 200 answered is collected; after the load the bench waits for the runs to
 * end and reads them back: completions/s is the runs over the time from the first acceptance
 * to the last finish (server clocks), and "lost" counts answered run ids that did not end
 * `succeeded`. CPU per webhook is each platform process's CPU time (from /proc) over that
 * window, divided by the webhooks answered: steadier than rates on a busy machine.
 *
 * In scale-out the servers' CPU is counted too (every `postgres` and `redis-server` process
 * of the machine, exited PostgreSQL backends included), with PostgreSQL's WAL and the
 * database's growth per webhook; in embedded mode the growth is that of the tables and
 * indexes in the PGlite data directory (`base`), dead rows included until a vacuum frees them.
 *
 * The platform runs as the README starts it (embedded: `bun run start`; scale-out:
 * `start:api` + `start:worker` on DATABASE_URL and REDIS_URL), in processes of its own,
 * with NODE_ENV=production. Scale-out runs when both variables are set, once on REDIS_URL
 * and once on a Redis Cluster of three primaries with a replica each started for the run
 * (`REDIS_URL=redis+cluster://...`, RUN_QUEUE_PARTITIONS=16) when redis-server is installed,
 * and once through a transaction-pooling PgBouncer when Debian's `pgbouncer` is;
 * `--modes embedded,scale-out,pgbouncer,cluster` picks some.
 *
 * `--partition-days N` (scale-out modes, bench/lib/platform.ts): before the load, day
 * partitions of runs are made N days ahead, so that runs has as many partitions as a
 * deployment keeping N − 7 days of runs (a fresh database has eight: the first and a week
 * ahead), for another tree's platform too. Statements that name no run id read every partition.
 */

import { resolve } from "node:path";
import Stripe from "stripe";
import { redisClusterMissing, startLocalRedisCluster } from "../packages/core/src/testing.ts";
import { pgBouncerMissing } from "../packages/db/src/testing.ts";
import { flag, listFlag } from "./lib/args.ts";
import { type LoadResult, load, report } from "./lib/load.ts";
import * as thisTree from "./lib/platform.ts";
import {
  addPartitionsAhead,
  availableModes,
  PARTITION_DAYS,
  type RunningPlatform,
  startBaseline,
} from "./lib/platform.ts";
import { awaitCompletion, createFlow, eventBody, type Ingest, ingest } from "./lib/webhook-ingest.ts";

const SECONDS = flag("seconds", 10);
const MODES = listFlag("modes", ["embedded", "scale-out", "pgbouncer", "cluster"]);
const CONNECTIONS = flag("connections", 64);
/** The source tree whose platform is measured (`--tree /tmp/before`, a worktree with its dependencies), by its own `bench/lib/platform.ts`. */
const TREE = listFlag("tree", ["."])[0] as string;
const tree = (
  resolve(TREE) === resolve(import.meta.dir, "..") ? thisTree : await import(`${resolve(TREE)}/bench/lib/platform.ts`)
) as Pick<typeof thisTree, "startPlatform" | "signUpForBench">;
const { signUpForBench } = tree;
/** An older tree's platform may not say its other API addresses (it has none). */
const startPlatform = async (...args: Parameters<typeof thisTree.startPlatform>): Promise<RunningPlatform> => {
  const started = await tree.startPlatform(...args);
  // This tree's platform has them made as it starts; another tree's may not know the flag.
  if (tree !== thisTree) await addPartitionsAhead(started.databaseUrl);
  return { ...started, alsoUrls: started.alsoUrls ?? [] };
};
const SETTINGS = { connections: CONNECTIONS, seconds: SECONDS };
/** Signed deliveries made per second of load: more than a platform answers here, or repeats are sent. */
const MAX_RATE = flag("stripe-rate", 8000);
const STRIPE_SECRET = "whsec_benchmarkSigningSecret000000";
const stripe = new Stripe("sk_test_bench");

/** Stripe-Signature headers made by Stripe's library, one event id each. */
async function signedDeliveries(count: number): Promise<{ bodies: string[]; signatures: string[] }> {
  const bodies: string[] = [];
  const signatures: string[] = [];
  const run = Date.now().toString(36);
  for (let i = 0; i < count; i++) {
    const body = eventBody(`evt_${run}_${i}`);
    bodies.push(body);
    signatures.push(await stripe.webhooks.generateTestHeaderStringAsync({ payload: body, secret: STRIPE_SECRET }));
  }
  return { bodies, signatures };
}

type Kind = "public" | "stripe";
const KINDS = listFlag("kinds", ["public", "stripe"]) as Kind[];
const KIND_LABELS: Record<Kind, string> = { public: "public access", stripe: "Stripe-signed" };

async function measureKind(platform: RunningPlatform, kind: Kind): Promise<Ingest> {
  const { token } = await signUpForBench(platform.url);
  const target = { platform, token };
  const warmUp = await createFlow(target, "warm-up", {});
  const run = Date.now().toString(36);
  // Warm up (flows cached, connections open), and check the answer once.
  const first = await fetch(warmUp.webhookUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: eventBody("evt_first"),
  });
  if (first.status !== 200) throw new Error(`ingress answered ${first.status} ${await first.text()}`);
  await load({
    url: warmUp.webhookUrl,
    method: "POST",
    headers: { "content-type": "application/json" },
    bodyOf: (n) => eventBody(`evt_warm_${run}_${n}`),
    connections: CONNECTIONS,
    durationSeconds: 2,
  });
  await awaitCompletion(target, warmUp, SETTINGS);

  if (kind === "public") {
    // Public access de-duplicates nothing: one body serves, and the load generator builds no request per delivery.
    const open = await createFlow(target, "public", {});
    return ingest(target, open, SETTINGS, { body: eventBody(`evt_${run}_public`) });
  }
  const signed = await createFlow(target, "stripe", {
    access: "signature",
    service: "stripe",
    signing_secret: STRIPE_SECRET,
  });
  const count = Math.ceil(MAX_RATE * SECONDS) + CONNECTIONS;
  const { bodies, signatures } = await signedDeliveries(count);
  const result = await ingest(target, signed, SETTINGS, {
    bodyOf: (n) => bodies[n % count] as string,
    headersOf: (n) => ({ "stripe-signature": signatures[n % count] as string }),
  });
  if (result.answered + result.unanswered > count) {
    console.warn(`the load outran its ${count} signed deliveries (repeats were answered): raise --stripe-rate`);
  }
  return result;
}

function print(mode: string, trivial: LoadResult, rows: [string, Ingest][]): void {
  report(
    `${mode} mode, acknowledge, 1 KB JSON, ${CONNECTIONS} connections, ${SECONDS} s each${PARTITION_DAYS !== null ? `, runs partitioned ${PARTITION_DAYS} days ahead` : ""}`,
    trivial,
    rows.map(([name, result]) => [`webhook, ${name}`, result.load]),
  );
  console.log(
    "what".padEnd(34),
    "answered".padStart(9),
    "completed/s".padStart(12),
    "lost".padStart(5),
    "in flight at stop".padStart(18),
    "WAL B".padStart(6),
    "DB B".padStart(6),
    "  CPU µs per webhook",
  );
  for (const [name, result] of rows) {
    console.log(
      `webhook, ${name}`.padEnd(34),
      String(result.answered).padStart(9),
      Math.round(result.completionsPerSecond).toString().padStart(12),
      String(result.lost).padStart(5),
      String(result.unanswered).padStart(18),
      (result.walBytes === undefined ? "-" : Math.round(result.walBytes).toString()).padStart(6),
      (result.databaseBytes === undefined ? "-" : Math.round(result.databaseBytes).toString()).padStart(6),
      ` ${Object.entries(result.cpuPerWebhook)
        .map(([role, micros]) => `${role} ${Math.round(micros)}`)
        .join(", ")}`,
    );
  }
}

/** The deployments measured, each started afresh. */
const deployments: { label: string; start(): Promise<RunningPlatform> }[] = [
  ...availableModes()
    .filter((mode) => MODES.includes(mode))
    .map((mode) => ({ label: mode, start: () => startPlatform(mode) })),
  ...(availableModes().includes("scale-out") && MODES.includes("pgbouncer") && !(await pgBouncerMissing())
    ? [
        {
          label: "scale-out through PgBouncer (transaction pooling)",
          start: () => startPlatform("scale-out", {}, { pgBouncer: true }),
        },
      ]
    : []),
  ...(availableModes().includes("scale-out") && MODES.includes("cluster") && !redisClusterMissing()
    ? [
        {
          label: "scale-out on a Redis Cluster (3 primaries + 3 replicas, 16 run queue partitions)",
          async start() {
            const cluster = await startLocalRedisCluster();
            const platform = await startPlatform(
              "scale-out",
              { RUN_QUEUE_PARTITIONS: "16" },
              { redisUrl: cluster.url },
            );
            return {
              ...platform,
              async stop() {
                await platform.stop();
                await cluster.stop();
              },
            };
          },
        },
      ]
    : []),
];

const baseline = await startBaseline();
try {
  for (const deployment of deployments) {
    const rows: [string, Ingest][] = [];
    for (const kind of KINDS) {
      const platform = await deployment.start();
      try {
        rows.push([KIND_LABELS[kind], await measureKind(platform, kind)]);
      } finally {
        await platform.stop();
      }
    }
    const trivial = await load({ url: baseline.url, connections: CONNECTIONS, durationSeconds: SECONDS });
    print(deployment.label, trivial, rows);
  }
} finally {
  await baseline.stop();
}
