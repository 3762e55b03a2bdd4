/**
 * Webhook ingress in acknowledge mode (issue 9's target, scale-out: ≥ 5,000 webhooks/s
 * acknowledged and completed, p99 acknowledge ≤ 25 ms, none lost), in both modes, next to
 * a trivial `Bun.serve` measured in the same run.
 *
 *   bun bench/webhooks.ts [--seconds N] [--connections N]
 *
 * Each delivery is a 1 KB JSON event sent to a flow of one `transform` step, first with
 * public access (the same event every time: nothing de-duplicates it), then signed for
 * Stripe, with an `id` of its own per delivery since the ingress de-duplicates by the
 * Stripe event id (signatures made beforehand by Stripe's own library, so the load
 * generator spends nothing on them). Every run id a 200 answered is collected; after the
 * load the bench waits for the runs to end and reads them back: completions/s is the runs
 * over the time from the first acceptance to the last finish (server clocks), and "lost"
 * counts answered run ids that did not end `succeeded`. CPU per webhook is each platform
 * process's CPU time (from /proc) over that window, divided by the webhooks answered:
 * steadier than rates on a busy machine.
 *
 * The platform runs as the README starts it (embedded: `bun run start`; scale-out:
 * `start:api` + `start:worker` on DATABASE_URL and REDIS_URL), in processes of its own,
 * with NODE_ENV=production. Scale-out runs when both variables are set.
 */
import Stripe from "stripe";
import { flag } from "./lib/args.ts";
import { cpuNow, cpuSpent } from "./lib/cpu.ts";
import { type LoadResult, load, report } from "./lib/load.ts";
import {
  availableModes,
  callApi,
  type RunningPlatform,
  signUpForBench,
  startBaseline,
  startPlatform,
} from "./lib/platform.ts";

const SECONDS = flag("seconds", 10);
const CONNECTIONS = flag("connections", 64);
/** How long the runs may take to end after the load before the rest count as lost. */
const SETTLE_MS = SECONDS * 6_000 + 30_000;
const STRIPE_SECRET = "whsec_benchmarkSigningSecret000000";
const stripe = new Stripe("sk_test_bench");

/** A Stripe-shaped event of about 1 KB with the given id. */
function eventBody(id: string): string {
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

interface Platform {
  platform: RunningPlatform;
  token: string;
}

interface Flow {
  id: string;
  webhookUrl: string;
}

async function createFlow(target: Platform, name: string, trigger: Record<string, unknown>): Promise<Flow> {
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
async function awaitCompletion(target: Platform, flow: Flow): Promise<void> {
  const deadline = Date.now() + SETTLE_MS;
  while (Date.now() < deadline) {
    const open = [...(await runsOf(target, flow, "queued", 1)), ...(await runsOf(target, flow, "running", 1))];
    if (open.length === 0) return;
    await Bun.sleep(250);
  }
}

interface Ingest {
  load: LoadResult;
  answered: number;
  /** Runs per second from the first acceptance to the last finish. */
  completionsPerSecond: number;
  /** Answered run ids that did not end `succeeded`. */
  lost: number;
  /** CPU time each platform process spent per answered webhook, in µs, from the load's start to the last run's end. */
  cpuPerWebhook: Record<string, number>;
  /** Runs recorded for requests still in flight when the load stopped (their answers were not read): not lost, not counted as acknowledged. */
  unanswered: number;
}

async function ingest(
  target: Platform,
  flow: Flow,
  requests: {
    body?: string;
    bodyOf?: (n: number) => string;
    headersOf?: (n: number) => Record<string, string>;
    amount?: number;
  },
): Promise<Ingest> {
  const answered = new Set<string>();
  const cpuBefore = cpuNow(target.platform.pids);
  const result = await load({
    url: flow.webhookUrl,
    method: "POST",
    headers: { "content-type": "application/json" },
    body: requests.body,
    bodyOf: requests.bodyOf,
    headersOf: requests.headersOf,
    amount: requests.amount,
    connections: CONNECTIONS,
    durationSeconds: SECONDS,
    onResponse: (status, body) => {
      const runId = status === 200 ? /"run_id":"([^"]+)"/.exec(body)?.[1] : undefined;
      if (runId) answered.add(runId);
    },
  });
  await awaitCompletion(target, flow);
  const cpu = cpuSpent(target.platform.pids, cpuBefore);
  const runs = await runsOf(target, flow);
  const succeeded = new Set(runs.filter((run) => run.status === "succeeded").map((run) => run.id));
  let lost = 0;
  for (const id of answered) if (!succeeded.has(id)) lost++;
  let first = Number.POSITIVE_INFINITY;
  let last = 0;
  for (const run of runs) {
    first = Math.min(first, Date.parse(run.created_at));
    if (run.finished_at) last = Math.max(last, Date.parse(run.finished_at));
  }
  return {
    load: result,
    answered: answered.size,
    completionsPerSecond: (succeeded.size / (last - first)) * 1000,
    lost,
    cpuPerWebhook: Object.fromEntries(
      Object.entries(cpu).map(([role, seconds]) => [role, (seconds * 1e6) / Math.max(answered.size, 1)]),
    ),
    unanswered: runs.filter((run) => !answered.has(run.id)).length,
  };
}

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

async function measureMode(platform: RunningPlatform): Promise<[string, Ingest][]> {
  const { token } = await signUpForBench(platform.url);
  const target = { platform, token };
  const warmUp = await createFlow(target, "warm-up", {});
  const open = await createFlow(target, "public", {});
  const signed = await createFlow(target, "stripe", {
    access: "signature",
    service: "stripe",
    signing_secret: STRIPE_SECRET,
  });
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
  await awaitCompletion(target, warmUp);

  const rows: [string, Ingest][] = [];
  // Public access de-duplicates nothing: one body serves, and the load generator builds no request per delivery.
  const publicIngest = await ingest(target, open, { body: eventBody(`evt_${run}_public`) });
  rows.push(["public access", publicIngest]);
  // As many signed deliveries as the public rate would take in the same time, and some more.
  const count = Math.ceil(publicIngest.load.rps * SECONDS * 1.2) + CONNECTIONS;
  const { bodies, signatures } = await signedDeliveries(count);
  rows.push([
    "Stripe-signed",
    await ingest(target, signed, {
      bodyOf: (n) => bodies[n % count] as string,
      headersOf: (n) => ({ "stripe-signature": signatures[n % count] as string }),
      amount: count - CONNECTIONS,
    }),
  ]);
  return rows;
}

function print(mode: string, trivial: LoadResult, rows: [string, Ingest][]): void {
  report(
    `${mode} mode, acknowledge, 1 KB JSON, ${CONNECTIONS} connections, ${SECONDS} s each`,
    trivial,
    rows.map(([name, result]) => [`webhook, ${name}`, result.load]),
  );
  console.log(
    "what".padEnd(34),
    "answered".padStart(9),
    "completed/s".padStart(12),
    "lost".padStart(5),
    "in flight at stop".padStart(18),
    "  CPU µs per webhook",
  );
  for (const [name, result] of rows) {
    console.log(
      `webhook, ${name}`.padEnd(34),
      String(result.answered).padStart(9),
      Math.round(result.completionsPerSecond).toString().padStart(12),
      String(result.lost).padStart(5),
      String(result.unanswered).padStart(18),
      ` ${Object.entries(result.cpuPerWebhook)
        .map(([role, micros]) => `${role} ${Math.round(micros)}`)
        .join(", ")}`,
    );
  }
}

const baseline = await startBaseline();
try {
  for (const mode of availableModes()) {
    const platform = await startPlatform(mode);
    try {
      const rows = await measureMode(platform);
      const trivial = await load({ url: baseline.url, connections: CONNECTIONS, durationSeconds: SECONDS });
      print(mode, trivial, rows);
    } finally {
      await platform.stop();
    }
  }
} finally {
  await baseline.stop();
}
