import { afterAll, expect, test } from "bun:test";
import { coreConfigSchema, parseEnv, toCoreConfig } from "../config.ts";
import { createModuleSteps } from "./module-steps.ts";
import type { StepContext } from "./step-functions.ts";

const server = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch: async (request) => Response.json({ method: request.method, got: await request.json() }),
});
const guarded = createModuleSteps(toCoreConfig(parseEnv(coreConfigSchema, {})).steps);
const open = createModuleSteps(toCoreConfig(parseEnv(coreConfigSchema, { ALLOW_PRIVATE_NETWORK: "true" })).steps);

afterAll(async () => {
  await Promise.all([server.stop(true), guarded.close(), open.close()]);
});

const context: StepContext = {
  accountId: "00000000-0000-4000-8000-000000000001",
  runId: "00000000-0000-4000-8000-000000000002",
  stepName: "step",
  signal: new AbortController().signal,
  timeoutMs: 5000,
  trigger: { order: { total: 20 } },
  steps: { lookup: { rate: 0.25 } },
};

test("js gets {trigger, steps} as its input", async () => {
  const code = "export default ({ trigger, steps }) => ({ tax: trigger.order.total * steps.lookup.rate })";
  expect(await open.js?.({ code }, context)).toEqual({ tax: 5 });
});

test("js refuses a payload without code, for good", async () => {
  await expect(open.js?.({ script: "x" }, context)).rejects.toMatchObject({
    message: "js: payload.code must be the module's source text",
    retryable: false,
  });
});

test("http.request follows ALLOW_PRIVATE_NETWORK from the settings", async () => {
  const payload = { method: "POST", url: `http://127.0.0.1:${server.port}/`, body: { a: 1 } };
  expect(await open["http.request"]?.(payload, context)).toMatchObject({
    status: 200,
    body: { method: "POST", got: { a: 1 } },
  });
  await expect(guarded["http.request"]?.(payload, context)).rejects.toMatchObject({
    message: expect.stringContaining("http.request: refused 127.0.0.1 (loopback 127.0.0.0/8)"),
    retryable: false,
  });
});
