/// <reference lib="dom" />
/**
 * The web console in a real browser (Debian's chromium), in both modes (issue 20's targets:
 * the first load is at most 250 KB of compressed JavaScript and interactive within 1 s; a run
 * list receiving 100 new runs a second stays responsive).
 *
 *   bun bench/console.ts [--loads N] [--seconds N] [--rate N]
 *
 * 1. First load: a fresh browser profile (no cache) opens /console/sign-in, N times; the time
 *    until the sign-in button can be clicked, beside a trivial page (a form, no script)
 *    served by Bun.serve and opened the same way in the same run. The JavaScript bytes are
 *    counted as the wire carried them.
 * 2. Live list: a signed-in page shows a flow's runs while runs are started at --rate a
 *    second for --seconds; in the page, long tasks (PerformanceObserver) and the lateness
 *    of a 50 ms timer (how long a click would wait) are recorded, and how long after the
 *    last start the list shows them all.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildConsole } from "../apps/web/build/build-console.ts";
import { launchChromium, type Page } from "../apps/web/scripts/chromium.ts";
import { freeLoopbackPort } from "../packages/db/src/testing.ts";
import { flag } from "./lib/args.ts";
import { availableModes, callApi, type RunningPlatform, signUpForBench, startPlatform } from "./lib/platform.ts";

const LOADS = flag("loads", 10);
const SECONDS = flag("seconds", 10);
const RATE = flag("rate", 100);

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
const percentile = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * p))] ?? 0;

async function startTrivialPage(): Promise<{ url: string; stop(): void }> {
  const port = await freeLoopbackPort();
  const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sign in</title></head>
<body><main><h1>Sign in</h1><form><label>Email <input type="email"></label><label>Password <input type="password"></label><button type="submit">Sign in</button></form></main></body></html>`;
  const server = Bun.serve({
    port,
    hostname: "127.0.0.1",
    fetch: () => new Response(html, { headers: { "content-type": "text/html; charset=utf-8" } }),
  });
  return { url: `http://127.0.0.1:${port}/`, stop: () => server.stop(true) };
}

/** Median milliseconds from navigation to a clickable sign-in button, and the script bytes carried. */
async function firstLoads(url: string): Promise<{ ms: number[]; scriptBytes: number }> {
  const browser = await launchChromium();
  const ms: number[] = [];
  let scriptBytes = 0;
  try {
    for (let i = 0; i < LOADS; i++) {
      const context = await browser.newContext();
      const page = await context.newPage();
      const sizes: Promise<number>[] = [];
      page.on("requestfinished", (request) => {
        if (request.resourceType() === "script") sizes.push(request.sizes().then((s) => s.responseBodySize));
      });
      const started = performance.now();
      await page.goto(url, { waitUntil: "commit" });
      await page.getByRole("button", { name: "Sign in" }).waitFor({ state: "visible" });
      await page.getByRole("button", { name: "Sign in" }).isEnabled();
      ms.push(performance.now() - started);
      scriptBytes = (await Promise.all(sizes)).reduce((sum, size) => sum + size, 0);
      await context.close();
    }
  } finally {
    await browser.close();
  }
  return { ms, scriptBytes };
}

/** Starts and watches the in-page probes: long tasks, and how late a 50 ms timer fires. */
async function installProbes(page: Page): Promise<void> {
  await page.evaluate(() => {
    const probe = { longTasks: [] as number[], lateness: [] as number[] };
    (globalThis as unknown as { probe: typeof probe }).probe = probe;
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) probe.longTasks.push(entry.duration);
    }).observe({ type: "longtask", buffered: false });
    let expected = performance.now() + 50;
    setInterval(() => {
      const now = performance.now();
      probe.lateness.push(Math.max(0, now - expected));
      expected = now + 50;
    }, 50);
  });
}

async function liveList(platform: RunningPlatform) {
  const { token, email } = await signUpForBench(platform.url);
  const flow = await callApi(platform, token, "POST", "/flows", {
    name: "live list bench",
    trigger: { type: "manual" },
    steps: [{ name: "echo", subject: "transform", payload: { n: "{{trigger.n}}" } }],
  });
  const flowId = flow.data.id as string;
  const browser = await launchChromium();
  try {
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    await page.goto(`${platform.url}/console/sign-in`);
    await page.getByLabel("Email").fill(email);
    await page.getByLabel("Password").fill("correct horse battery staple");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(/\/console\/flows$/);
    await page.goto(`${platform.url}/console/flows/${flowId}`);
    await page.getByText("No runs yet.").waitFor();
    await installProbes(page);

    const total = RATE * SECONDS;
    const started = performance.now();
    const starts: Promise<Response>[] = [];
    for (let n = 0; n < total; n++) {
      const due = started + (n / RATE) * 1000;
      const wait = due - performance.now();
      if (wait > 0) await Bun.sleep(wait);
      starts.push(
        fetch(`${platform.url}/flows/${flowId}/runs`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: JSON.stringify({ n }),
        }),
      );
    }
    const answers = await Promise.all(starts);
    const refused = answers.filter((answer) => !answer.ok).length;
    const lastStart = performance.now();
    await page.waitForFunction(
      (expected) => (document.querySelector(".runs-count")?.textContent ?? "").startsWith(`${expected} runs shown`),
      total - refused,
      { timeout: 60_000, polling: 100 },
    );
    const caughtUpMs = performance.now() - lastStart;
    const probe = await page.evaluate(
      () => (globalThis as unknown as { probe: { longTasks: number[]; lateness: number[] } }).probe,
    );
    return {
      runs: total - refused,
      refused,
      caughtUpMs,
      longTaskCount: probe.longTasks.length,
      longTaskTotalMs: probe.longTasks.reduce((sum, d) => sum + d, 0),
      longTaskMaxMs: Math.max(0, ...probe.longTasks),
      latenessP95Ms: percentile(probe.lateness, 0.95),
      latenessMaxMs: Math.max(0, ...probe.lateness),
      seconds: (lastStart - started) / 1000,
    };
  } finally {
    await browser.close();
  }
}

const consoleDir = join(mkdtempSync(join(tmpdir(), "console-bench-")), "dist");
await buildConsole(consoleDir);
const trivial = await startTrivialPage();
try {
  for (const mode of availableModes()) {
    const platform = await startPlatform(mode, { CONSOLE_DIR: consoleDir });
    try {
      const baseline = await firstLoads(trivial.url);
      const console_ = await firstLoads(`${platform.url}/console/sign-in`);
      const baselineMs = median(baseline.ms);
      const consoleMs = median(console_.ms);
      console.log(`\n${mode} mode`);
      console.log(
        `first load (median of ${LOADS}, no cache): trivial page ${baselineMs.toFixed(0)} ms, console ${consoleMs.toFixed(0)} ms (${(consoleMs / baselineMs).toFixed(1)}x); worst console load ${Math.max(...console_.ms).toFixed(0)} ms`,
      );
      console.log(`JavaScript on the wire: ${(console_.scriptBytes / 1024).toFixed(1)} KiB (budget 250 KB)`);
      const live = await liveList(platform);
      console.log(
        `live list, ${live.runs} runs started at ${RATE}/s over ${live.seconds.toFixed(1)} s (${live.refused} refused): all shown ${live.caughtUpMs.toFixed(0)} ms after the last start; ` +
          `long tasks ${live.longTaskCount} (total ${live.longTaskTotalMs.toFixed(0)} ms, max ${live.longTaskMaxMs.toFixed(0)} ms); ` +
          `a 50 ms timer late by p95 ${live.latenessP95Ms.toFixed(0)} ms, max ${live.latenessMaxMs.toFixed(0)} ms`,
      );
    } finally {
      await platform.stop();
    }
  }
} finally {
  trivial.stop();
}
