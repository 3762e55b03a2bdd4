import { afterAll, beforeAll, describe, expect } from "bun:test";
import { mkdtempSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freeLoopbackPort } from "@platform/db/testing";
import { runModes, startTestApi, type TestApi } from "../../api/test/harness.ts";
import { buildConsole } from "../build/build-console.ts";
import { type Browser, type BrowserContext, chromiumMissing, launchChromium, type Page } from "../scripts/chromium.ts";

/** Why the browser suites cannot run here, or false: each says so in its name when skipped. */
export const noBrowser: string | false = (await chromiumMissing())
  ? "chromium is not installed (apt-get install -y chromium)"
  : false;

let built: Promise<string> | undefined;

/** The console, built once per test process into a directory of its own. */
export function consoleBuild(): Promise<string> {
  built ??= (async () => {
    const dir = join(mkdtempSync(join(tmpdir(), "console-")), "dist");
    await buildConsole(dir);
    return dir;
  })();
  return built;
}

export const launchBrowser = launchChromium;

/** What a suite of console journeys drives, there from its `beforeAll` on. */
export interface ConsoleSuite {
  /** The platform serving the console. */
  api: TestApi;
  browser: Browser;
  /**
   * Where the console is served, `http://localhost:<port>`, and the platform's PUBLIC_URL (mails
   * link to it): a name, not 127.0.0.1, because an IP address cannot be a passkey's relying party.
   */
  origin: string;
}

/**
 * A suite of console journeys, once per run mode (skipped, saying why, where the mode or a
 * browser is missing): the platform serving the console, and a browser, start before its
 * tests and stop after them. `env` is read as the platform starts, after the suite's own
 * `beforeAll`s (a stand-in mailbox or registry it names is up by then).
 */
export function describeConsole(
  title: string,
  options: { worker?: boolean; env?: () => Record<string, string> },
  body: (suite: ConsoleSuite) => void,
): void {
  for (const { backend, redis, label, skip } of runModes()) {
    const skipped = skip || noBrowser;
    describe.skipIf(Boolean(skipped))(`console: ${title} on ${label}${skipped ? ` (skipped: ${skipped})` : ""}`, () => {
      const started = {} as ConsoleSuite;
      let stopping = false;
      body(started);
      beforeAll(async () => {
        const port = await freeLoopbackPort();
        started.origin = `http://localhost:${port}`;
        started.api = await startTestApi({
          backend,
          redis,
          port,
          worker: options.worker,
          consoleDir: await consoleBuild(),
          env: { PUBLIC_URL: started.origin, ...options.env?.() },
        });
        started.browser = await launchBrowser();
        // Said at once: a browser that dies under a journey leaves only timeouts behind it.
        started.browser.on("disconnected", () => {
          if (!stopping) console.error(`console: ${title} on ${label}: the browser went away before the suite ended`);
        });
        // The first suite of a test process builds the console as well.
      }, 120_000);
      afterAll(async () => {
        stopping = true;
        await started.browser?.close();
        await started.api?.stop();
      });
    });
  }
}

/** A fresh browser profile (no cookies), at a desktop size, with every page's console errors kept. */
export async function newContext(browser: Browser): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(error.message));
  // A crashed page answers no wait again: said at once, or its journey ends in a bare timeout.
  page.on("crash", () => console.error(`the page at ${page.url()} crashed`));
  page.on("console", (message) => {
    // A refused request logs itself in the browser; what matters here is the page's own failures and CSP reports.
    if (message.type() === "error" && !message.text().startsWith("Failed to load resource"))
      errors.push(message.text());
  });
  return { context, page, errors };
}

const axeSource = await Bun.file(Bun.resolveSync("axe-core/axe.min.js", import.meta.dir)).text();

/** axe-core over the page as it is: no serious or critical violation may remain. */
export async function expectAccessible(page: Page): Promise<void> {
  // Evaluated through the DevTools protocol, which the page's CSP does not govern.
  await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run: (context: Document) => Promise<{ violations: Violation[] }> } })
      .axe;
    const result = await axe.run(document);
    return result.violations
      .filter((v) => v.impact === "serious" || v.impact === "critical")
      .map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
  });
  expect(violations).toEqual([]);
}

interface Violation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

export const SCREENSHOT_DIR = process.env.SCREENSHOT_DIR ?? join(tmpdir(), "console-screenshots");

/**
 * A screenshot of the whole page, kept in SCREENSHOT_DIR to be looked at; the page must
 * fit its width (nothing cut off to the side) and show its heading.
 */
export async function screenshot(page: Page, name: string): Promise<void> {
  const { scrollWidth, innerWidth, heading } = await page.evaluate(() => ({
    scrollWidth: document.documentElement.scrollWidth,
    innerWidth: window.innerWidth,
    heading: document.querySelector("h1")?.textContent ?? "",
  }));
  expect(scrollWidth).toBeLessThanOrEqual(innerWidth);
  expect(heading.length).toBeGreaterThan(0);
  await mkdir(SCREENSHOT_DIR, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOT_DIR, `${name}.png`), fullPage: true });
}

/** Signs in through the sign-in page and waits for the flows page. */
export async function signInThroughPage(page: Page, origin: string, email: string, password: string): Promise<void> {
  await page.goto(`${origin}/console/sign-in`);
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL(`${origin}/console/flows`);
}
