import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { freeLoopbackPort } from "@platform/db/testing";
import type { Browser } from "playwright-core";
import { startTestApi, type TestApi } from "../../api/test/harness.ts";
import { launchBrowser, newContext, noBrowser } from "./browser.ts";

/** The API reference at /docs (Swagger UI), served by the API beside the console: it must work under its policy. */
describe.skipIf(Boolean(noBrowser))(`the API docs page${noBrowser ? ` (skipped: ${noBrowser})` : ""}`, () => {
  let api: TestApi;
  let browser: Browser;
  let origin: string;
  beforeAll(async () => {
    const port = await freeLoopbackPort();
    // "Try it out" sends requests to PUBLIC_URL, the document's server: here, this page's own origin.
    origin = `http://127.0.0.1:${port}`;
    api = await startTestApi({ backend: "pglite", port, env: { PUBLIC_URL: origin } });
    browser = await launchBrowser();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await api?.stop();
  });

  test("renders every operation and tries one under its strict policy, with no violation", async () => {
    const { page, context, errors } = await newContext(browser);
    await page.goto(`${origin}/docs`);
    await page.getByRole("heading", { name: /Workflow Platform API/ }).waitFor();
    await page.locator(".opblock").first().waitFor();
    expect(await page.locator(".opblock").count()).toBeGreaterThan(15);
    // Its stylesheet applied: Swagger UI's layout, not the browser's defaults.
    expect(await page.locator(".swagger-ui .info .title").evaluate((title) => getComputedStyle(title).fontSize)).toBe(
      "36px",
    );

    // An operation that needs a credential: tried without one, it answers 401, shown on the page.
    const prices = page.locator(".opblock", { hasText: "/accounts/payment/prices" });
    await prices.locator(".opblock-summary").click();
    await prices.getByRole("button", { name: "Try it out" }).click();
    await prices.getByRole("button", { name: "Execute" }).click();
    await prices.locator(".live-responses-table tbody .response-col_status").first().waitFor();
    expect(await prices.locator(".live-responses-table tbody .response-col_status").first().textContent()).toBe("401");
    expect(errors).toEqual([]);
    await context.close();
  });
});
