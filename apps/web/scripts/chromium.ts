import { type Browser, chromium } from "playwright-core";

export type { Browser, BrowserContext, Page } from "playwright-core";

/** Debian's chromium (`apt-get install -y chromium`; browsers cannot be downloaded here). */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

export const chromiumMissing = async () => !(await Bun.file(CHROMIUM).exists());

/** Chromium driven by playwright-core, for the console's tests and benchmark. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
}
