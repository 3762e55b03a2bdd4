import { expect, test } from "bun:test";
import { eventually } from "@platform/core/testing";
import type { Page } from "playwright-core";
import { bearer, PASSWORD, signUp } from "../../api/test/accounts-helpers.ts";
import { describeConsole, expectAccessible, newContext, screenshot, signInThroughPage } from "./browser.ts";

/** A run waits at its first step for the event `go-<trigger.n>`, then ends with a second step. */
const WAITING_STEPS = [
  { name: "approval", subject: "wait.event", payload: { key: "go-{{trigger.n}}" } },
  { name: "after", subject: "transform", payload: { approved: "{{steps.approval.ok}}" } },
];

/** Marks the page, so that a test can tell it was never loaded again. */
const mark = (page: Page) => page.evaluate(() => Object.assign(window, { notReloaded: true }));
const stillMarked = (page: Page) => page.evaluate(() => "notReloaded" in window);

describeConsole("live runs", { worker: true }, (suite) => {
  const call = async (token: string, path: string, body: unknown) => {
    const response = await suite.api.request(path, { method: "POST", headers: bearer(token), json: body });
    expect(response.status).toBe(200);
    return response.json() as Promise<{ data: { id: string }; run_id: string }>;
  };
  const statusOf = async (token: string, runId: string) =>
    ((await (await suite.api.request(`/runs/${runId}`, { headers: bearer(token) })).json()) as { status: string })
      .status;

  test("a run below a live list's newest page shows its new status without a reload", async () => {
    const user = await signUp(suite.api, "console-live-list");
    const token = user.auth.auth_token;
    const waiting = await call(token, "/flows", {
      name: "waiting",
      trigger: { type: "manual" },
      steps: WAITING_STEPS,
    });
    const quick = await call(token, "/flows", {
      name: "quick",
      trigger: { type: "manual" },
      steps: [{ name: "s", subject: "transform", payload: {} }],
    });
    const runId = (await call(token, `/flows/${waiting.data.id}/runs`, { n: 1 })).run_id;
    await eventually(async () => (await statusOf(token, runId)) === "running", 10_000);
    // 110 newer runs: the waiting one is past the newest page (100) of the account's list.
    for (let batch = 0; batch < 2; batch++) {
      await Promise.all(Array.from({ length: 55 }, (_, n) => call(token, `/flows/${quick.data.id}/runs`, { n })));
    }

    const { page, context, errors } = await newContext(suite.browser);
    await signInThroughPage(page, suite.origin, user.email, PASSWORD);
    await page.getByRole("navigation").getByRole("link", { name: "Runs" }).click();
    const list = page.getByRole("region", { name: "Runs" });
    // Scrolled to its end, the list reads the older page, where the waiting run is.
    await eventually(async () => {
      await list.evaluate((element) => element.scrollTo(0, element.scrollHeight));
      return (await page.locator(".runs-count").textContent()) === "111 runs shown";
    }, 15_000);
    await list.evaluate((element) => element.scrollTo(0, element.scrollHeight));
    const row = page.locator("tr.run-row", { has: page.getByRole("link", { name: runId.slice(-12), exact: true }) });
    await expect(row.getAttribute("data-status")).resolves.toBe("running");
    await mark(page);

    await call(token, "/events", { key: "go-1", data: { ok: true } });
    await eventually(async () => (await row.getAttribute("data-status")) === "succeeded", 15_000);
    expect(await stillMarked(page)).toBe(true);
    await expectAccessible(page);
    await screenshot(page, "runs-live-below-newest-page");
    expect(errors).toEqual([]);
    await context.close();
  });

  test("a run's page follows the run as it goes: its status and its steps, without a reload", async () => {
    const user = await signUp(suite.api, "console-live-run");
    const token = user.auth.auth_token;
    const flow = await call(token, "/flows", { name: "approval", trigger: { type: "manual" }, steps: WAITING_STEPS });
    const runId = (await call(token, `/flows/${flow.data.id}/runs`, { n: 7 })).run_id;

    const { page, context, errors } = await newContext(suite.browser);
    await signInThroughPage(page, suite.origin, user.email, PASSWORD);
    await page.goto(`${suite.origin}/console/runs/${runId}`);
    const timeline = page.getByRole("list", { name: "Steps" });
    // Waiting at its first step: the run is under way, the step waits, the second has not begun.
    await timeline.locator(".tl-step", { hasText: "approval" }).getByText("waiting").waitFor();
    await expect(page.locator(".page-head .status").textContent()).resolves.toBe("running");
    await expect(timeline.getByText("after", { exact: true }).count()).resolves.toBe(0);
    await expect(page.getByRole("button", { name: "Cancel" }).count()).resolves.toBe(1);
    await mark(page);
    await screenshot(page, "run-live-waiting");

    await call(token, "/events", { key: "go-7", data: { ok: true } });
    await page.locator(".page-head .status").getByText("succeeded").waitFor({ timeout: 15_000 });
    await timeline.getByText("after", { exact: true }).waitFor();
    await expect(timeline.locator(".tl-step", { hasText: "approval" }).getByText("succeeded").count()).resolves.toBe(1);
    // An ended run cannot be cancelled; its output is shown.
    await expect(page.getByRole("button", { name: "Cancel" }).count()).resolves.toBe(0);
    await page.getByRole("region", { name: "output" }).first().waitFor();
    expect(await stillMarked(page)).toBe(true);
    await expectAccessible(page);
    await screenshot(page, "run-live-succeeded");
    expect(errors).toEqual([]);
    await context.close();
  });
});
