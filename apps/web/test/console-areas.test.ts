import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Page } from "playwright-core";
import { bearer, PASSWORD, signUp } from "../../api/test/accounts-helpers.ts";
import { type StandInRegistry, startStandInRegistry } from "../../api/test/registry-upstream.ts";
import { describeConsole, expectAccessible, newContext, screenshot, signInThroughPage } from "./browser.ts";

/** The registry the platform reads, a stand-in started for each suite (they run one after another). */
let upstream: StandInRegistry;

describeConsole(
  "storage, nodes, gateways and the registry",
  { env: () => ({ MCP_REGISTRY_URL: upstream.url }) },
  (suite) => {
    beforeAll(async () => {
      upstream = await startStandInRegistry();
    });
    afterAll(async () => {
      await upstream?.stop();
    });

    async function signedInPage(tag: string): Promise<{ page: Page; close: () => Promise<void>; token: string }> {
      const user = await signUp(suite.api, tag);
      const { page, context } = await newContext(suite.browser);
      await signInThroughPage(page, suite.origin, user.email, PASSWORD);
      return { page, close: () => context.close(), token: user.auth.auth_token };
    }

    test("a stream is created, published to and browsed; a bucket's key is written and its value opened", async () => {
      const { page, close } = await signedInPage("console-storage");
      await page.getByRole("link", { name: "Storage" }).click();
      await page.getByLabel("Name").fill("orders");
      await page.getByRole("button", { name: "Create" }).click();
      await page.getByRole("heading", { name: "Stream orders" }).waitFor();
      await page.getByLabel("Subject").fill("orders.created");
      await page.getByLabel("Message (a JSON object)").fill('{"id": 42}');
      await page.getByRole("button", { name: "Publish" }).click();
      await page.getByText("#1").waitFor();
      await expectAccessible(page);
      await screenshot(page, "storage-stream");

      await page.getByLabel("Kind").selectOption("bucket");
      await page.getByLabel("Name").fill("prices");
      await page.getByRole("button", { name: "Create" }).click();
      await page.getByRole("heading", { name: "Bucket prices" }).waitFor();
      await page.getByLabel("Key", { exact: true }).fill("eur");
      await page.getByLabel("Value (JSON)").fill('{"rate": 1.08}');
      await page.getByRole("button", { name: "Write key" }).click();
      await page.getByRole("button", { name: "eur" }).click();
      await page.getByText("1.08").waitFor();
      await expectAccessible(page);
      await screenshot(page, "storage-bucket");
      await close();
    });

    test("a node template is made from JSON, its field errors listed with their paths, and referenced as nodes.<id>", async () => {
      const { page, close, token } = await signedInPage("console-nodes");
      await page.getByRole("link", { name: "Nodes" }).click();
      await page
        .getByLabel("Template (JSON)")
        .fill('{"name": "", "node_type": "function", "subject": "transform", "payload": {}}');
      await page.getByRole("button", { name: "Create template" }).click();
      await page.locator(".step-problems").getByText("data.name").waitFor();
      await page.getByLabel("Template (JSON)").fill(
        JSON.stringify({
          name: "double",
          node_type: "function",
          subject: "transform",
          payload: { x: 2 },
          options: {},
        }),
      );
      await page.getByRole("button", { name: "Create template" }).click();
      const reference = (await page.locator("td code").first().textContent()) ?? "";
      expect(reference).toMatch(/^nodes\./);
      await expectAccessible(page);
      await screenshot(page, "nodes");
      // A flow can use it by that reference.
      const flow = await suite.api.request("/flows", {
        method: "POST",
        headers: bearer(token),
        json: { name: "uses node", steps: [{ name: "d", node: reference }] },
      });
      expect(flow.status).toBe(200);
      await close();
    });

    test("a gateway is created and a mapping sends a path to a flow", async () => {
      const { page, close, token } = await signedInPage("console-gateways");
      const flow = await suite.api.request("/flows", {
        method: "POST",
        headers: bearer(token),
        json: { name: "answer", steps: [{ name: "a", subject: "transform", payload: {} }] },
      });
      expect(flow.status).toBe(200);
      await page.getByRole("link", { name: "Gateways" }).click();
      await page.getByRole("button", { name: "Create gateway" }).click();
      await page.getByRole("heading", { name: "orders api" }).waitFor();
      await page.getByLabel("Method").selectOption("POST");
      await page.getByLabel("Path").fill("/orders");
      await page.getByLabel("Flow").selectOption({ label: "answer" });
      await page.getByRole("button", { name: "Add mapping" }).click();
      await page.getByText("POST /orders").waitFor();
      await expectAccessible(page);
      await screenshot(page, "gateways");
      await close();
    });

    test("the MCP registry is searched by name", async () => {
      const { page, close } = await signedInPage("console-registry");
      const wanted = upstream.items()[7]?.server.name ?? "";
      await page.getByRole("link", { name: "MCP registry" }).click();
      await page.locator("ul.servers li").first().waitFor();
      await page.getByLabel("Search tool servers").fill(wanted);
      await page.getByRole("button", { name: "Search" }).click();
      await page.locator("ul.servers li strong", { hasText: wanted }).first().waitFor();
      await expectAccessible(page);
      await screenshot(page, "registry");
      await close();
    });
  },
);
