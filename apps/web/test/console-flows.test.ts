import { expect, test } from "bun:test";
import { eventually } from "@platform/core/testing";
import { bearer, PASSWORD, signUp } from "../../api/test/accounts-helpers.ts";
import { describeConsole, expectAccessible, newContext, screenshot, signInThroughPage } from "./browser.ts";

describeConsole("flows and runs", { worker: true }, (suite) => {
  const createFlow = async (token: string, body: Record<string, unknown>) => {
    const response = await suite.api.request("/flows", { method: "POST", headers: bearer(token), json: body });
    expect(response.status).toBe(200);
    return ((await response.json()) as { data: { id: string; webhook: { url: string } } }).data;
  };
  const startRun = async (token: string, flowId: string, trigger: unknown) => {
    const response = await suite.api.request(`/flows/${flowId}/runs`, {
      method: "POST",
      headers: bearer(token),
      json: trigger,
    });
    expect(response.status).toBe(200);
    return ((await response.json()) as { run_id: string }).run_id;
  };

  test("a flow is written in the editor, checked as it is typed, saved, activated, and tried with a test event", async () => {
    const user = await signUp(suite.api, "console-editor");
    const { page, context, errors } = await newContext(suite.browser);
    await context.grantPermissions(["clipboard-read", "clipboard-write"]);
    await signInThroughPage(page, suite.origin, user.email, PASSWORD);
    await expectAccessible(page);
    await screenshot(page, "flows-empty");

    await page.getByRole("link", { name: "New flow" }).click();
    await page.getByLabel("Name").fill("orders");
    const steps = page.getByLabel("Steps (JSON)");
    await steps.fill('[{"name": "greet", "subject": "no.such.subject", "payload": {}}]');
    // The server's verdict, pointing at the step by its place and name.
    await page.getByText("Step 1 (“greet”)").waitFor();
    await expect(page.locator(".step-problems").textContent()).resolves.toContain("subject");
    await steps.fill('[{"name": "greet", "subject": "transform"');
    await page.getByText("Not JSON yet").waitFor();
    await steps.fill(
      JSON.stringify([
        { name: "greet", subject: "transform", payload: { hello: "{{trigger.name}}" } },
        {
          name: "route",
          switch: [{ when: "{{trigger.vip}}", steps: [{ name: "vip", subject: "transform", payload: {} }] }],
          default: [{ name: "regular", subject: "transform", payload: {} }],
        },
      ]),
    );
    await page.getByText("The steps are valid.").waitFor();
    // The graph draws the switch's case and default beside each other.
    const graph = page.getByRole("figure", { name: "Steps graph" });
    for (const name of ["greet", "route", "vip", "regular"]) await graph.getByText(name, { exact: true }).waitFor();
    await expectAccessible(page);
    await screenshot(page, "flow-editor");

    await page.getByRole("button", { name: "Create flow" }).click();
    await page.getByRole("heading", { name: "orders" }).waitFor();
    const webhookUrl = (await page.locator("dd code").first().textContent()) ?? "";
    expect(webhookUrl).toMatch(/\/webhooks\/[\w-]+$/);
    await page.getByRole("button", { name: "Copy URL" }).click();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(webhookUrl);

    // Edited: the saved steps come back into the editor, and saving makes revision 2.
    await page.getByRole("link", { name: "Edit" }).click();
    await page.getByRole("heading", { name: "Edit orders" }).waitFor();
    await expect(page.getByLabel("Steps (JSON)").inputValue()).resolves.toContain('"route"');
    await page.getByLabel("Description").fill("orders, routed");
    await page.getByText("The steps are valid.").waitFor();
    await page.getByRole("button", { name: "Save" }).click();
    // Exact: the editor's own heading, "Edit orders", holds the name too.
    await page.getByRole("heading", { name: "orders", exact: true }).waitFor();
    await expect(page.locator("dl.facts").textContent()).resolves.toContain("Revision2");

    await page.getByRole("button", { name: "Deactivate" }).click();
    await page.getByRole("button", { name: "Activate" }).waitFor();
    await page.getByRole("button", { name: "Activate" }).click();
    await page.getByRole("button", { name: "Deactivate" }).waitFor();

    await page.getByText("Send a test event").click();
    await page.getByLabel("Trigger data (JSON)").fill('{"name": "Ada", "vip": true}');
    await page.getByRole("button", { name: "Start a run" }).click();
    await page.getByRole("status").getByRole("link").click();
    await page.getByText("succeeded").first().waitFor();
    const timeline = page.getByRole("list", { name: "Steps" });
    for (const name of ["greet", "route", "vip"]) await timeline.getByText(name, { exact: true }).waitFor();
    await expect(timeline.getByText("regular", { exact: true }).count()).resolves.toBe(0);
    await expectAccessible(page);
    await screenshot(page, "run-succeeded");
    expect(errors).toEqual([]);
    await context.close();
  });

  test("runs appear in a flow's list as they are accepted, filter by status, and a failed one shows its error and replays", async () => {
    const user = await signUp(suite.api, "console-runs");
    const token = user.auth.auth_token;
    // The bucket does not exist: every run fails at its step, with the step's error. Its flow
    // controls let every run through, and the page lists them.
    const flow = await createFlow(token, {
      name: "failing",
      trigger: { type: "manual" },
      rate_limit: { limit: 100, period_s: 3600 },
      start_timeout_s: 3600,
      steps: [{ name: "save", subject: "kv.put", payload: { bucket: "missing", key: "k", value: "{{trigger.n}}" } }],
    });
    const { page, context } = await newContext(suite.browser);
    await signInThroughPage(page, suite.origin, user.email, PASSWORD);
    await page.goto(`${suite.origin}/console/flows/${flow.id}`);
    await page.getByText("No runs yet.").waitFor();
    const facts = await page.locator("dl.facts").textContent();
    expect(facts).toContain("Start timeoutcancelled if not started within 3600 s");
    expect(facts).toContain("Rate limit100 starts per 3600 s; the others are skipped");

    const ids = [];
    for (let n = 0; n < 5; n++) ids.push(await startRun(token, flow.id, { n }));
    // No reload: the list follows.
    const rows = page.locator("tr.run-row");
    await eventually(async () => (await rows.count()) === 5);
    await eventually(async () => (await page.locator('tr.run-row[data-status="failed"]').count()) === 5);
    await expectAccessible(page);
    await screenshot(page, "flow-runs");

    await page.getByLabel("Status").selectOption("succeeded");
    await page.getByText("No runs yet.").waitFor();
    await page.getByLabel("Status").selectOption("failed");
    await eventually(async () => (await rows.count()) === 5);
    // Accepted from tomorrow on: none.
    await page.getByLabel("From").fill(new Date(Date.now() + 86_400_000).toISOString().slice(0, 16));
    await page.getByText("No runs yet.").waitFor();
    await page.getByLabel("From").fill("");
    await eventually(async () => (await rows.count()) === 5);

    // The account's list holds them too, naming their flow.
    await page.getByRole("navigation").getByRole("link", { name: "Runs" }).click();
    await page.getByRole("heading", { name: "Runs" }).waitFor();
    await eventually(async () => (await rows.count()) === 5);
    await expect(rows.first().getByRole("link", { name: "failing" }).count()).resolves.toBe(1);
    await expectAccessible(page);
    await screenshot(page, "account-runs");
    await page.goBack();

    await rows.first().getByRole("link").first().click();
    await page.getByText('step "save" failed').first().waitFor();
    await expect(page.locator(".tl-error").first().textContent()).resolves.toContain("bucket not found");
    await screenshot(page, "run-failed");
    const failedUrl = page.url();
    await page.getByRole("button", { name: "Replay" }).click();
    await page.waitForURL((url) => url.href !== failedUrl && url.pathname.startsWith("/console/runs/"));
    await page.getByText("Replay of").waitFor();
    await context.close();
  });

  test("the Metrics page charts the runs of the last hour, for the account and per flow", async () => {
    const user = await signUp(suite.api, "console-metrics");
    const token = user.auth.auth_token;
    const ok = await createFlow(token, {
      name: "fine",
      trigger: { type: "manual" },
      steps: [{ name: "s", subject: "transform", payload: {} }],
    });
    const bad = await createFlow(token, {
      name: "broken",
      trigger: { type: "manual" },
      steps: [{ name: "save", subject: "kv.put", payload: { bucket: "missing", key: "k", value: 1 } }],
    });
    for (const flowId of [ok.id, ok.id, bad.id]) await startRun(token, flowId, {});
    const { page, context } = await newContext(suite.browser);
    await signInThroughPage(page, suite.origin, user.email, PASSWORD);
    await page.getByRole("link", { name: "Metrics" }).click();
    const totals = page.locator("table.totals tbody td");
    await eventually(async () => (await totals.allTextContents()).join(",") === "3,2,1,0", 10_000);
    await page.locator(".chart canvas").first().waitFor();
    await expectAccessible(page);
    await screenshot(page, "metrics");
    await page.getByLabel("Flow").selectOption({ label: "broken" });
    await eventually(async () => (await totals.allTextContents()).join(",") === "1,0,1,0", 10_000);
    await page.getByLabel("Over the last").selectOption("day");
    await page.getByText("Runs per 15 minutes, broken").waitFor();
    await context.close();
  });

  test("a burst of more runs than a page between two looks at the list is listed whole", async () => {
    const user = await signUp(suite.api, "console-burst");
    const token = user.auth.auth_token;
    const flow = await createFlow(token, {
      name: "bursty",
      trigger: { type: "manual" },
      steps: [{ name: "s", subject: "transform", payload: {} }],
    });
    const { page, context } = await newContext(suite.browser);
    await signInThroughPage(page, suite.origin, user.email, PASSWORD);
    await page.goto(`${suite.origin}/console/flows/${flow.id}`);
    await page.getByText("No runs yet.").waitFor();
    await startRun(token, flow.id, { n: -1 });
    await page.getByText("1 runs shown").waitFor();
    // 250 at once: the list reads back through the pages to the run it already showed.
    for (let batch = 0; batch < 5; batch++) {
      await Promise.all(Array.from({ length: 50 }, (_, n) => startRun(token, flow.id, { n: batch * 50 + n })));
    }
    await page.getByText("251 runs shown").waitFor({ timeout: 15_000 });
    await context.close();
  });

  test("a run under way is cancelled from its page", async () => {
    const user = await signUp(suite.api, "console-cancel");
    const token = user.auth.auth_token;
    const flow = await createFlow(token, {
      name: "slow",
      trigger: { type: "manual" },
      steps: [{ name: "pause", subject: "delay", payload: { ms: 600_000 } }],
    });
    const runId = await startRun(token, flow.id, {});
    const { page, context } = await newContext(suite.browser);
    await signInThroughPage(page, suite.origin, user.email, PASSWORD);
    await page.goto(`${suite.origin}/console/runs/${runId}`);
    await page.getByRole("button", { name: "Cancel" }).click();
    await page.locator(".page-head .status").getByText("cancelled").waitFor();
    await expect(page.getByRole("button", { name: "Cancel" }).count()).resolves.toBe(0);
    const answer = await suite.api.request(`/runs/${runId}`, { headers: bearer(token) });
    expect(((await answer.json()) as { status: string }).status).toBe("cancelled");
    await context.close();
  });
});
