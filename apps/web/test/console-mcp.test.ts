import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Page } from "playwright-core";
import { bearer, PASSWORD, signUp } from "../../api/test/accounts-helpers.ts";
import { type McpUpstream, startMcpUpstream } from "../../api/test/mcp-upstream.ts";
import { type StandInRegistry, startStandInRegistry } from "../../api/test/registry-upstream.ts";
import { describeConsole, expectAccessible, newContext, screenshot, signInThroughPage } from "./browser.ts";

/** The registry the platform reads and the MCP server one of its entries names (on 127.0.0.1, allowed). */
let registry: StandInRegistry;
let upstream: McpUpstream;

describeConsole(
  "MCP: a registry server's tool used in a flow, and a flow offered as a tool",
  {
    worker: true,
    env: () => ({
      MCP_REGISTRY_URL: registry.url,
      HTTP_REQUEST_ALLOWED_NETWORKS: "127.0.0.1",
      WAIT_TIMEOUT_MS: "20000",
    }),
  },
  (suite) => {
    beforeAll(async () => {
      registry = await startStandInRegistry([]);
      upstream = startMcpUpstream();
    });
    afterAll(async () => {
      upstream?.stop();
      await registry?.stop();
    });

    async function signedInPage(tag: string): Promise<{ page: Page; close: () => Promise<void>; token: string }> {
      const user = await signUp(suite.api, tag);
      const { page, context } = await newContext(suite.browser);
      await signInThroughPage(page, suite.origin, user.email, PASSWORD);
      return { page, close: () => context.close(), token: user.auth.auth_token };
    }

    /** The registry page, searched for `name`, with that server's tools listed. */
    async function openTools(page: Page, name: string): Promise<void> {
      await page.getByRole("link", { name: "MCP registry" }).click();
      await page.getByLabel("Search tool servers").fill(name);
      await page.getByRole("button", { name: "Search" }).click();
      await page.getByText(`Tools of ${name}`).click();
      await page.getByRole("button", { name: "List tools" }).click();
      await page.getByText("Adds two numbers.").waitFor();
    }

    async function flowOf(token: string, id: string) {
      const response = await suite.api.request(`/flows/${id}`, { headers: bearer(token) });
      return ((await response.json()) as { data: Record<string, unknown> }).data;
    }

    test("a registry server's remotes and tools are shown; use in a flow adds an mcp.call step that runs", async () => {
      const name = `io.example/calculator-${crypto.randomUUID().slice(0, 6)}`;
      registry.publish({
        name,
        version: "2.0.0",
        description: "Adds, shouts and refuses",
        remotes: [
          { type: "streamable-http", url: upstream.url },
          { type: "sse", url: "https://calc.example.com/sse" },
        ],
      });
      await suite.api.services.registry.sync.run();
      const { page, close, token } = await signedInPage("console-mcp-use");
      await openTools(page, name);
      const remotes = page.getByRole("list", { name: `Remotes of ${name}` });
      await remotes.getByText(upstream.url).waitFor();
      await remotes.getByText("https://calc.example.com/sse").waitFor();
      await page.getByText("Arguments: a (number, required), b (number, required)").waitFor();
      await expectAccessible(page);
      await screenshot(page, "registry-tools");

      await page.getByRole("button", { name: "Use in a flow: add" }).click();
      await page.getByLabel("Flow for add").selectOption({ label: "a new flow" });
      await page.getByRole("button", { name: "Add the step" }).click();
      await page.getByRole("heading", { name: "New flow" }).waitFor();
      await page.getByText("Step “add” added").waitFor();
      const steps = JSON.parse(await page.getByLabel("Steps (JSON)").inputValue());
      expect(steps).toEqual([
        {
          name: "add",
          subject: "mcp.call",
          payload: { server: { registry: name }, tool: "add", arguments: { a: "{{trigger.a}}", b: "{{trigger.b}}" } },
        },
      ]);
      await page.getByText("The steps are valid.").waitFor();
      await screenshot(page, "flow-editor-added-step");
      await page.getByLabel("Name").fill("calculator");
      await page.getByLabel("Started by").selectOption("manual");
      await page.getByRole("button", { name: "Create flow" }).click();
      await page.getByRole("heading", { name: "calculator", exact: true }).waitFor();
      const flowId = new URL(page.url()).pathname.split("/").at(-1) ?? "";

      // The step runs as added: the trigger's a and b are the tool's arguments.
      const run = await suite.api.request(`/flows/${flowId}/runs?wait=true`, {
        method: "POST",
        headers: bearer(token),
        json: { a: 40, b: 2 },
      });
      expect(await run.json()).toEqual({ sum: 42 });

      // Into the flow just made: the step is appended under a name of its own, and saved from the editor.
      await openTools(page, name);
      await page.getByRole("button", { name: "Use in a flow: add" }).click();
      await page.getByLabel("Flow for add").selectOption({ label: "calculator" });
      await page.getByRole("button", { name: "Add the step" }).click();
      await page.getByRole("heading", { name: "Edit calculator" }).waitFor();
      await page.getByText("Step “add_2” added").waitFor();
      await page.getByRole("button", { name: "Save" }).click();
      await page.getByRole("heading", { name: "calculator", exact: true }).waitFor();
      const saved = await flowOf(token, flowId);
      expect((saved.steps as { name: string }[]).map((step) => step.name)).toEqual(["add", "add_2"]);
      await close();
    });

    test("a server that refuses the listing says why", async () => {
      const name = `io.example/private-${crypto.randomUUID().slice(0, 6)}`;
      registry.publish({
        name,
        version: "1.0.0",
        description: "on a private address",
        remotes: [{ type: "streamable-http", url: `http://10.0.0.1:${upstream.port}/mcp` }],
      });
      await suite.api.services.registry.sync.run();
      const { page, close } = await signedInPage("console-mcp-refused");
      await page.getByRole("link", { name: "MCP registry" }).click();
      await page.getByLabel("Search tool servers").fill(name);
      await page.getByRole("button", { name: "Search" }).click();
      await page.getByText(`Tools of ${name}`).click();
      await page.getByRole("button", { name: "List tools" }).click();
      await page.getByRole("alert").getByText("refused 10.0.0.1").waitFor();
      await close();
    });

    test("the flow page's switch offers the flow as a tool with its schema, and withdraws it", async () => {
      const { page, close, token } = await signedInPage("console-mcp-tool");
      const created = await suite.api.request("/flows", {
        method: "POST",
        headers: bearer(token),
        json: {
          name: "Refund an order",
          description: "Refunds an order",
          trigger: { type: "manual" },
          steps: [{ name: "refund", subject: "transform", payload: { refunded: "{{trigger.order_id}}" } }],
        },
      });
      const flowId = ((await created.json()) as { data: { id: string } }).data.id;
      await page.goto(`${suite.origin}/console/flows/${flowId}`);
      await page.getByRole("heading", { name: "MCP tool" }).waitFor();
      await page.getByRole("switch", { name: "Offer this flow as a tool of the account's MCP endpoint" }).check();
      await expect(page.getByLabel("Tool name").inputValue()).resolves.toBe("refund_an_order");
      // A schema the API refuses is said beside its field.
      await page
        .getByLabel("Input schema (JSON Schema)")
        .fill('{"type": "object", "properties": {"order_id": {"type": "text"}}}');
      await page.getByRole("button", { name: "Save tool settings" }).click();
      await page.getByText("properties.order_id.type:").waitFor();
      await page
        .getByLabel("Input schema (JSON Schema)")
        .fill('{"type": "object", "required": ["order_id"], "properties": {"order_id": {"type": "string"}}}');
      await page.getByRole("button", { name: "Save tool settings" }).click();
      await page.getByText("is offered at").waitFor();
      await expectAccessible(page);
      await screenshot(page, "flow-mcp-tool");
      expect((await flowOf(token, flowId)).mcp).toEqual({
        tool: "refund_an_order",
        description: "Refunds an order",
        input_schema: { type: "object", required: ["order_id"], properties: { order_id: { type: "string" } } },
        output_schema: null,
      });

      await page.getByRole("switch", { name: "Offer this flow as a tool of the account's MCP endpoint" }).uncheck();
      await page.getByRole("button", { name: "Save tool settings" }).click();
      await page.getByText("is offered at").waitFor({ state: "detached" });
      expect((await flowOf(token, flowId)).mcp).toBeNull();
      await close();
    });
  },
);
