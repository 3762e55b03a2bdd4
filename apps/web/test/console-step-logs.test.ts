import { afterAll, beforeAll, expect, test } from "bun:test";
import { startTracing, tracingEnvSchema, tracingSettings } from "@platform/core";
import { eventually } from "@platform/core/testing";
import type { Server } from "bun";
import { bearer, PASSWORD, signUp } from "../../api/test/accounts-helpers.ts";
import { OtlpReceiver } from "../../api/test/otlp-receiver.ts";
import { describeConsole, expectAccessible, newContext, screenshot, signInThroughPage } from "./browser.ts";

let upstream: Server<undefined>;
beforeAll(() => {
  upstream = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: () => Response.json({ items: [{ sku: "A-1", qty: 2 }], total: -5 }),
  });
});
afterAll(() => upstream.stop(true));

describeConsole(
  "a failing step's logs and call on its run page",
  { worker: true, env: () => ({ HTTP_REQUEST_ALLOWED_NETWORKS: "127.0.0.1" }) },
  (suite) => {
    const post = async (token: string, path: string, body: unknown) => {
      const response = await suite.api.request(path, { method: "POST", headers: bearer(token), json: body });
      expect(response.status).toBe(200);
      return response.json() as Promise<{ data: { id: string }; run_id: string }>;
    };

    test("the run page shows what the failing js step printed, the call before it, and the error, secrets redacted", async () => {
      const user = await signUp(suite.api, "console-step-logs");
      const token = user.auth.auth_token;
      const secret = await suite.api.request("/secrets/shop-key", {
        method: "PUT",
        headers: bearer(token),
        json: { value: "shk_live_5e3f9a" },
      });
      expect(secret.status).toBe(200);
      const flow = await post(token, "/flows", {
        name: "check order",
        trigger: { type: "manual" },
        steps: [
          {
            name: "fetch",
            subject: "http.request",
            payload: { url: `http://127.0.0.1:${upstream.port}/orders/{{trigger.id}}?key={{secrets.shop-key}}` },
          },
          {
            name: "validate",
            subject: "js",
            payload: {
              code: `export default ({ steps }) => {
                const order = steps.fetch.body;
                console.log("items", order.items);
                console.info("signing with", "{{secrets.shop-key}}");
                if (order.total < 0) {
                  console.warn("total is negative:", order.total);
                  throw new Error("invalid total " + order.total);
                }
                return order;
              }`,
            },
          },
        ],
      });
      const runId = (await post(token, `/flows/${flow.data.id}/runs`, { id: 17 })).run_id;

      const { page, context, errors } = await newContext(suite.browser);
      await signInThroughPage(page, suite.origin, user.email, PASSWORD);
      await page.goto(`${suite.origin}/console/runs/${runId}`);
      await page.getByText('step "validate" failed').first().waitFor();
      const fetch = page.getByRole("list", { name: "Attempts of fetch" });
      await eventually(async () => (await fetch.count()) === 1);
      const call = await fetch.textContent();
      expect(call).toContain(`GET http://127.0.0.1:${upstream.port}/orders/17?key=[secret:shop-key]`);
      expect(call).toMatch(/→ 200 in \d+ ms, sent 0 B, received \d+ B/);
      const validate = page.getByRole("list", { name: "Attempts of validate" });
      const lines = await validate.locator("li.log").allTextContents();
      expect(lines).toHaveLength(3);
      expect(lines[0]).toMatch(/^\+\d+ mslogitems \[\{"sku":"A-1","qty":2\}\]$/);
      expect(lines[1]).toContain("infosigning with [secret:shop-key]");
      expect(lines[2]).toContain("warntotal is negative: -5");
      await expect(validate.locator(".tl-error").textContent()).resolves.toBe("js: Error: invalid total -5");
      expect(await page.content()).not.toContain("shk_live_5e3f9a");
      await expectAccessible(page);
      await screenshot(page, "run-step-logs");
      expect(errors).toEqual([]);
      await context.close();
    });

    test("a run accepted while the API traces shows its trace id", async () => {
      const receiver = new OtlpReceiver();
      const env = tracingEnvSchema.parse({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: "50" });
      const tracing = startTracing(tracingSettings(env, "platform-api"));
      try {
        const user = await signUp(suite.api, "console-trace");
        const token = user.auth.auth_token;
        const flow = await post(token, "/flows", {
          name: "traced",
          steps: [{ name: "shape", subject: "transform", payload: { ok: true } }],
        });
        const runId = (await post(token, `/flows/${flow.data.id}/runs`, {})).run_id;
        const run = await (await suite.api.request(`/runs/${runId}`, { headers: bearer(token) })).json();
        expect(run.trace_id).toMatch(/^[0-9a-f]{32}$/);
        const { page, context, errors } = await newContext(suite.browser);
        await signInThroughPage(page, suite.origin, user.email, PASSWORD);
        await page.goto(`${suite.origin}/console/runs/${runId}`);
        await page.getByText(run.trace_id).waitFor();
        expect(errors).toEqual([]);
        await context.close();
      } finally {
        await tracing.shutdown();
        receiver.stop();
      }
    });
  },
);
