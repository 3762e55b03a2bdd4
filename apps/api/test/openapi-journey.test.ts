import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { bearer, PASSWORD, uniqueEmail } from "./accounts-helpers.ts";
import { startTestApi, type TestApi } from "./harness.ts";

/**
 * The main journey of a user, sign-up to runs, storage, gateways and metrics, with the error
 * cases on the way: every answer is validated (Ajv, JSON Schema draft 2020-12) against the
 * schema the server's own OpenAPI document gives for its operation and status, so the
 * document a non-TypeScript client is generated from cannot drift from what the server does.
 */

type Document = { paths: Record<string, Record<string, { responses: Record<string, Response> }>> };
type Response = { content?: Record<string, { schema: unknown }> };

// biome-ignore lint/suspicious/noExplicitAny: the schema check and the assertions that read a body are its type check
type Answer = { status: number; body: any };

let api: TestApi;
let document: Document;
let ajv: Ajv2020;
const checked = new Set<string>();

beforeAll(async () => {
  api = await startTestApi({ backend: "pglite", worker: true });
  document = (await (await fetch(`${api.url}/openapi.json`)).json()) as Document;
  ajv = new Ajv2020({ strict: false, validateSchema: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema(document as object, "openapi");
});
afterAll(() => api?.stop());

const pointer = (...parts: string[]) => parts.map((part) => part.replaceAll("~", "~0").replaceAll("/", "~1")).join("/");

/**
 * Sends a request to `template` (the document's path, `{name}` filled from `params`) and checks
 * the answer against the document: its status must be declared (or `default`), and a JSON body
 * must fit that status's schema. Answers the status and the parsed body.
 */
async function call(
  method: string,
  template: string,
  options: { params?: Record<string, string>; query?: string; json?: unknown; headers?: Record<string, string> } = {},
): Promise<Answer> {
  // A gateway's `{path}` is the rest of the address, slashes and all.
  const fill = (name: string, value: string) => (name === "path" ? value : encodeURIComponent(value));
  const path = template.replace(/\{(\w+)\}/g, (_, name: string) => fill(name, options.params?.[name] ?? ""));
  const response = await api.request(`${path}${options.query ?? ""}`, {
    method,
    headers: options.headers,
    json: options.json,
  });
  const text = await response.text();
  const operation = document.paths[template]?.[method.toLowerCase()];
  expect(operation, `${method} ${template} is in the document`).toBeDefined();
  const declared = operation?.responses[String(response.status)] ? String(response.status) : "default";
  const answer = operation?.responses[declared];
  expect(answer, `${method} ${template} declares ${response.status}: ${text.slice(0, 200)}`).toBeDefined();
  const body = text && response.headers.get("content-type")?.includes("json") ? JSON.parse(text) : text;
  const schema = answer?.content?.["application/json"]?.schema;
  if (schema !== undefined && typeof body === "object") {
    const ref = `openapi#/${pointer("paths", template, method.toLowerCase(), "responses", declared, "content", "application/json", "schema")}`;
    const validate = ajv.getSchema(ref) ?? ajv.compile({ $ref: ref });
    const valid = validate(body);
    expect(
      valid ? [] : validate.errors,
      `${method} ${template} ${response.status} fits its schema: ${text.slice(0, 300)}`,
    ).toEqual([]);
  }
  checked.add(`${method} ${template} ${response.status}`);
  return { status: response.status, body };
}

describe("the OpenAPI document describes every answer of the main journey", () => {
  let auth: Record<string, string>;
  let flowId: string;

  test("sign-up, sign-in, the user's own account, API keys, and their errors", async () => {
    const email = uniqueEmail("journey");
    const account = { email, password: PASSWORD, account_name: "journey", display_name: "Ada" };
    expect((await call("POST", "/accounts/signup", { json: account })).status).toBe(200);
    expect((await call("POST", "/accounts/signup", { json: account })).status).toBe(409);
    expect((await call("POST", "/accounts/signup", { json: { email } })).status).toBe(400);
    const signIn = await call("POST", "/accounts/auth-with-password", { json: { email, password: PASSWORD } });
    auth = bearer(signIn.body.data.auth_token);
    expect((await call("POST", "/accounts/auth-with-password", { json: { email, password: "wrong" } })).status).toBe(
      401,
    );
    expect((await call("GET", "/accounts/users", { headers: auth })).status).toBe(200);
    expect((await call("GET", "/accounts/payment/prices", { headers: auth })).status).toBe(200);
    expect((await call("GET", "/accounts/usage", { headers: auth })).status).toBe(200);
    const key = await call("POST", "/accounts/api-keys", {
      headers: auth,
      json: { name: "ci", allowed_paths: ["GET /accounts/users"] },
    });
    expect(key.status).toBe(200);
    expect((await call("GET", "/accounts/api-keys", { headers: auth })).status).toBe(200);
    const keyAuth = { "x-api-key": key.body.data.key };
    expect((await call("GET", "/accounts/payment/prices", { headers: keyAuth })).status).toBe(403);
    expect((await call("GET", "/accounts/users")).status).toBe(401);
    expect(
      (await call("POST", "/accounts/refresh", { json: { refresh_token: signIn.body.data.refresh_token } })).status,
    ).toBe(200);
  });

  test("secrets and node templates", async () => {
    expect(
      (await call("PUT", "/secrets/{key}", { params: { key: "k" }, headers: auth, json: { value: "v" } })).status,
    ).toBe(200);
    expect((await call("GET", "/secrets/{key}", { params: { key: "k" }, headers: auth })).status).toBe(200);
    expect((await call("GET", "/secrets", { headers: auth })).status).toBe(200);
    expect((await call("GET", "/secrets/{key}", { params: { key: "none" }, headers: auth })).status).toBe(404);
    const node = await call("POST", "/hub/nodes", {
      headers: auth,
      json: { collection: "c", data: { name: "n", node_type: "function", subject: "transform", payload: { a: 1 } } },
    });
    expect(node.status).toBe(200);
    expect((await call("GET", "/hub/nodes", { headers: auth })).status).toBe(200);
    expect((await call("GET", "/hub/nodes/{id}", { params: { id: node.body.data.id }, headers: auth })).status).toBe(
      200,
    );
    expect((await call("GET", "/hub/nodes/{id}", { params: { id: "nope" }, headers: auth })).status).toBe(400);
  });

  test("flows and runs, acknowledged and waited for, succeeded and failed", async () => {
    const flow = await call("POST", "/flows", {
      headers: auth,
      json: {
        name: "journey",
        steps: [{ name: "shape", subject: "transform", payload: { order: "{{trigger.order}}" } }],
      },
    });
    expect(flow.status).toBe(200);
    flowId = flow.body.data.id;
    expect((await call("GET", "/flows", { headers: auth })).status).toBe(200);
    expect((await call("GET", "/flows/{id}", { params: { id: flowId }, headers: auth })).status).toBe(200);
    const bad = await call("POST", "/flows", {
      headers: auth,
      json: { name: "x", steps: [{ name: "s", subject: "nope" }] },
    });
    expect(bad.status).toBe(400);
    const accepted = await call("POST", "/flows/{id}/runs", {
      params: { id: flowId },
      headers: auth,
      json: { order: 7 },
    });
    expect(accepted.body).toEqual({ message: "accepted", run_id: expect.any(String) });
    const waited = await call("POST", "/flows/{id}/runs", {
      params: { id: flowId },
      query: "?wait=true",
      headers: auth,
      json: { order: 8 },
    });
    expect(waited).toEqual({ status: 200, body: { order: 8 } });
    const failing = await call("POST", "/flows", {
      headers: auth,
      json: { name: "fails", steps: [{ name: "get", subject: "kv.get", payload: { bucket: "none", key: "k" } }] },
    });
    const failed = await call("POST", "/flows/{id}/runs", {
      params: { id: failing.body.data.id },
      query: "?wait=true",
      headers: auth,
      json: {},
    });
    expect(failed.status).toBe(500);
    const runs = await call("GET", "/flows/{id}/runs", { params: { id: flowId }, headers: auth });
    expect(runs.body.data.length).toBe(2);
    const run = await call("GET", "/runs/{id}", { params: { id: accepted.body.run_id }, headers: auth });
    expect(run.status).toBe(200);
    expect(
      (await call("POST", "/runs/{id}/replay", { params: { id: accepted.body.run_id }, headers: auth })).status,
    ).toBe(200);
    expect((await call("GET", "/runs/{id}", { params: { id: crypto.randomUUID() }, headers: auth })).status).toBe(404);
  });

  test("webhooks: a delivery, a wrong body, an unknown hook", async () => {
    const flow = await call("GET", "/flows/{id}", { params: { id: flowId }, headers: auth });
    const hook = flow.body.data.webhook.id;
    expect(
      (await call("POST", "/webhooks/{webhook_id}", { params: { webhook_id: hook }, json: { order: 1 } })).status,
    ).toBe(200);
    expect((await call("POST", "/webhooks/{webhook_id}", { params: { webhook_id: "unknown" }, json: {} })).status).toBe(
      404,
    );
  });

  test("streams and KV buckets, with compare-and-set and their errors", async () => {
    const stream = { params: { name: "orders" }, headers: auth };
    expect((await call("PUT", "/storage/streams/{name}", { ...stream, json: { description: "o" } })).status).toBe(200);
    expect(
      (
        await call("POST", "/storage/streams/{name}/messages", {
          ...stream,
          json: { stream: "orders", subject: "orders.eu", body: { id: 1 } },
        })
      ).status,
    ).toBe(200);
    expect((await call("GET", "/storage/streams/{name}/messages", stream)).status).toBe(200);
    const bucket = { params: { bucket: "settings" }, headers: auth };
    expect((await call("PUT", "/storage/kv/{bucket}", { ...bucket, json: { description: "s" } })).status).toBe(200);
    const key = { params: { bucket: "settings", key: "theme" }, headers: auth };
    expect(
      (await call("PUT", "/storage/kv/{bucket}/keys/{key}", { ...key, json: { value: { dark: true } } })).status,
    ).toBe(200);
    expect((await call("GET", "/storage/kv/{bucket}/keys/{key}", key)).status).toBe(200);
    expect(
      (await call("PUT", "/storage/kv/{bucket}/keys/{key}", { ...key, json: { value: 1, revision: 0 } })).status,
    ).toBe(409);
    expect((await call("GET", "/storage/kv/{bucket}/keys", bucket)).status).toBe(200);
    expect((await call("GET", "/storage/kv/{bucket}", bucket)).status).toBe(200);
    expect((await call("GET", "/storage/kv/{bucket}", { params: { bucket: "none" }, headers: auth })).status).toBe(404);
    expect((await call("DELETE", "/storage/streams/{name}", stream)).status).toBe(200);
  });

  test("gateways: create, map, call, and the errors of each", async () => {
    const subject = `journey-${crypto.randomUUID().slice(0, 8)}`;
    const created = await call("POST", "/gateway", { headers: auth, json: { name: "shop", subject } });
    expect(created.status).toBe(200);
    expect((await call("POST", "/gateway", { headers: auth, json: { name: "shop", subject } })).status).toBe(409);
    const mapping = await call("POST", "/gateway/{gateway_topic}/mapping", {
      params: { gateway_topic: subject },
      headers: auth,
      json: { method: "POST", path: "/orders/:id", flow_id: flowId },
    });
    expect(mapping.status).toBe(200);
    const ran = await call("POST", "/gw/{gateway_topic}/{path}", {
      params: { gateway_topic: subject, path: "orders/42" },
      json: { order: 9 },
    });
    expect(ran).toEqual({ status: 200, body: { order: 9 } });
    expect(
      (await call("GET", "/gateway/{gateway_topic}", { params: { gateway_topic: subject }, headers: auth })).status,
    ).toBe(200);
    expect((await call("GET", "/gateway", { headers: auth })).status).toBe(200);
    expect(
      (
        await call("POST", "/gw/{gateway_topic}/{path}", {
          params: { gateway_topic: subject, path: "nowhere" },
          json: {},
        })
      ).status,
    ).toBe(404);
  });

  test("metrics, and what the metrics endpoint answers for a bad request", async () => {
    expect((await call("GET", "/monitoring/metrics", { headers: auth })).status).toBe(200);
    const current = await call("POST", "/monitoring/metrics/current", {
      headers: auth,
      json: { metrics: ["runs.started"] },
    });
    expect(current.status).toBe(200);
    expect((await call("POST", "/monitoring/metrics/current", { headers: auth, json: { metrics: [] } })).status).toBe(
      400,
    );
  });

  test("an answer that does not fit its schema is caught", () => {
    const ref = `openapi#/${pointer("paths", "/accounts/signup", "post", "responses", "200", "content", "application/json", "schema")}`;
    const validate = ajv.getSchema(ref) ?? ajv.compile({ $ref: ref });
    expect(validate({ data: { auth_token: 1 } })).toBe(false);
  });

  test("the journey went through every area of the document", () => {
    const areas = new Set([...checked].map((entry) => entry.split(" ")[1]?.split("/")[1]));
    expect([...areas].sort()).toEqual(
      ["accounts", "flows", "gateway", "gw", "hub", "monitoring", "runs", "secrets", "storage", "webhooks"].sort(),
    );
  });
});
