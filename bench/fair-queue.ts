/**
 * A fair share of the run queue (issue 29's target: another account's runs keep p99 under 1 s
 * while one account's backlog lasts), in both modes, next to a trivial `Bun.serve` measured in
 * the same run.
 *
 *   bun bench/fair-queue.ts [--seconds N] [--connections N] [--modes embedded,scale-out]
 *
 * Account B starts a one-step `transform` run every 100 ms (not waiting for it); its latency is
 * each run's acceptance to its end, by the server's clock (`created_at` to `finished_at`).
 * Three rows, `--seconds` each:
 * - B alone;
 * - B while account A sends webhooks as fast as `--connections` connections can, to a flow of
 *   one `transform` step (a cheap flood: the workers keep up, or nearly);
 * - B while A does the same to a flow whose one `js` step spends ~10 ms of CPU, so A's backlog
 *   grows faster than the workers drain it. In one shared queue B's runs wait behind all of it.
 * Between rows A's runs are left to end. After the last row only B's runs are waited for.
 */
import { flag } from "./lib/args.ts";
import { inEveryMode } from "./lib/every-mode.ts";
import { type LoadResult, load } from "./lib/load.ts";
import { callApi, modesFlag, type RunningPlatform, signUpForBench } from "./lib/platform.ts";
import { printTable } from "./lib/table.ts";
import { eventBody } from "./lib/webhook-ingest.ts";

const SECONDS = flag("seconds", 10);
const CONNECTIONS = flag("connections", 64);
const MODES = modesFlag();
const B_EVERY_MS = 100;

interface Account {
  platform: RunningPlatform;
  token: string;
}

async function account(platform: RunningPlatform): Promise<Account> {
  return { platform, token: (await signUpForBench(platform.url)).token };
}

async function flow(owner: Account, name: string, step: Record<string, unknown>, webhook: boolean) {
  const { data } = (await callApi(owner.platform, owner.token, "POST", "/flows", {
    name,
    ...(webhook ? { trigger: { type: "webhook", response_mode: "acknowledge" } } : {}),
    steps: [{ name: "only", ...step }],
  })) as { data: { id: string; webhook?: { id: string } } };
  return { id: data.id, webhookUrl: data.webhook ? `${owner.platform.url}/webhooks/${data.webhook.id}` : "" };
}

interface RunTimes {
  created_at: string;
  finished_at: string | null;
}

/** Starts one of B's runs every 100 ms while `during` lasts; answers their ids. */
async function startEvery(b: Account, flowId: string, during: Promise<unknown>): Promise<string[]> {
  const ids: string[] = [];
  let going = true;
  void during.finally(() => {
    going = false;
  });
  while (going) {
    const next = Bun.sleep(B_EVERY_MS);
    const { run_id } = (await callApi(b.platform, b.token, "POST", `/flows/${flowId}/runs`, { n: ids.length })) as {
      run_id: string;
    };
    ids.push(run_id);
    await next;
  }
  return ids;
}

/** Acceptance to end of each run, in ms, once all have ended. */
async function latencies(b: Account, ids: string[]): Promise<number[]> {
  const out: number[] = [];
  for (const id of ids) {
    for (;;) {
      const run = (await callApi(b.platform, b.token, "GET", `/runs/${id}`)) as RunTimes;
      if (run.finished_at) {
        out.push(Date.parse(run.finished_at) - Date.parse(run.created_at));
        break;
      }
      await Bun.sleep(100);
    }
  }
  return out;
}

/** Waits until A's flow has no run queued or running. */
async function drained(a: Account, flowId: string): Promise<void> {
  for (;;) {
    const open = await Promise.all(
      ["queued", "running"].map(
        (status) =>
          callApi(a.platform, a.token, "GET", `/flows/${flowId}/runs?limit=1&status=${status}`) as Promise<{
            data: unknown[];
          }>,
      ),
    );
    if (open.every((page) => page.data.length === 0)) return;
    await Bun.sleep(500);
  }
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * p) - 1)] ?? 0;

interface Row {
  what: string;
  b: number[];
  flood?: LoadResult;
}

async function measure(platform: RunningPlatform): Promise<Row[]> {
  const a = await account(platform);
  const b = await account(platform);
  const echo = await flow(b, "echo", { subject: "transform", payload: { n: "{{trigger.n}}" } }, false);
  const cheap = await flow(a, "cheap", { subject: "transform", payload: { id: "{{trigger.id}}" } }, true);
  const burning = await flow(
    a,
    "burning",
    {
      subject: "js",
      payload: { code: "export default () => { const end = Date.now() + 10; while (Date.now() < end) {} return 1 }" },
    },
    true,
  );
  const body = eventBody("evt_flood");
  const flood = (url: string) =>
    load({
      url,
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
      connections: CONNECTIONS,
      durationSeconds: SECONDS,
    });

  // Warm up: flows cached, connections open.
  await latencies(b, await startEvery(b, echo.id, Bun.sleep(1000)));

  const rows: Row[] = [];
  rows.push({ what: "B alone", b: await latencies(b, await startEvery(b, echo.id, Bun.sleep(SECONDS * 1000))) });
  for (const [what, target] of [
    ["B behind A's cheap flood", cheap],
    ["B behind A's backlog (js ~10 ms)", burning],
  ] as const) {
    const flooding = flood(target.webhookUrl);
    const ids = await startEvery(b, echo.id, flooding);
    rows.push({ what, b: await latencies(b, ids), flood: await flooding });
    if (target === cheap) await drained(a, cheap.id);
  }
  return rows;
}

function print(title: string, trivial: LoadResult, rows: Row[]): void {
  console.log(`\n${title}`);
  console.log(`baseline: trivial Bun.serve ${Math.round(trivial.rps)} req/s at ${CONNECTIONS} connections`);
  printTable(
    [
      ["what", 34],
      ["B runs", 7],
      ["p50 ms", 8],
      ["p99 ms", 8],
      ["max ms", 8],
      ["A webhooks/s", 13],
      ["A vs baseline", 14],
    ],
    rows.map(({ what, b, flood }) => {
      const sorted = [...b].sort((x, y) => x - y);
      return [
        what,
        String(b.length),
        String(percentile(sorted, 0.5)),
        String(percentile(sorted, 0.99)),
        String(sorted.at(-1) ?? 0),
        flood ? String(Math.round(flood.rps)) : "-",
        flood ? `${((flood.rps / trivial.rps) * 100).toFixed(1)}%` : "-",
      ];
    }),
  );
}

await inEveryMode(MODES, async (platform, baselineUrl) => {
  const rows = await measure(platform);
  const trivial = await load({ url: baselineUrl, connections: CONNECTIONS, durationSeconds: SECONDS });
  print(`${platform.mode} mode, ${SECONDS} s a row`, trivial, rows);
});
