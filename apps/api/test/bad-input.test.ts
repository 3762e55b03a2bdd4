import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { buildOpenApiDocument, coreConfigSchema, toCoreConfig } from "@platform/core";
import { bearer, signUp } from "./accounts-helpers.ts";
import { runModes, startTestApi, type TestApi } from "./harness.ts";
import { type StandInRegistry, startStandInRegistry } from "./registry-upstream.ts";

/**
 * Bad input sent to every operation of /openapi.json: odd strings in each path and query
 * parameter, wrong JSON types and hostile strings in each body field, broken and hostile
 * bodies, and no credential. Whatever comes back must be a 4xx (or a success) with an
 * error body in the documented shape: never a 5xx, never a stack. Operations added
 * later are picked up by themselves, since the cases come from the document.
 */

type Schema = {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, Schema>;
  items?: Schema;
  enum?: unknown[];
  const?: unknown;
  format?: string;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  default?: unknown;
  example?: unknown;
  minLength?: number;
};
type Parameter = { name: string; in: "path" | "query" | "header"; required?: boolean; schema?: Schema };
type Operation = {
  parameters?: Parameter[];
  requestBody?: { content?: Record<string, { schema?: Schema }> };
  security?: unknown[];
};

const document = buildOpenApiDocument(toCoreConfig(coreConfigSchema.parse({ LOG_LEVEL: "silent" })));
const components = (document.components?.schemas ?? {}) as Record<string, Schema>;

function resolve(schema: Schema | undefined): Schema {
  let current = schema ?? {};
  for (let hops = 0; current.$ref && hops < 10; hops++) {
    current = components[current.$ref.replace("#/components/schemas/", "")] ?? {};
  }
  if (current.allOf?.length) return Object.assign({}, ...current.allOf.map(resolve));
  return current;
}

/** A value the schema would likely accept, so that one bad field at a time is what gets tested. */
function sample(schema: Schema | undefined, depth = 0): unknown {
  const s = resolve(schema);
  if (s.const !== undefined) return s.const;
  if (s.enum?.length) return s.enum[0];
  if (s.example !== undefined) return s.example;
  if (s.default !== undefined) return s.default;
  const alternatives = s.anyOf ?? s.oneOf;
  if (alternatives?.length) return sample(alternatives[0], depth + 1);
  const type = Array.isArray(s.type) ? s.type.find((t) => t !== "null") : s.type;
  if (depth > 6) return null;
  switch (type) {
    case "string":
      if (s.format === "email") return "fuzz@example.com";
      if (s.format === "uuid") return crypto.randomUUID();
      if (s.format === "date-time") return new Date().toISOString();
      return "fuzz-value-123";
    case "integer":
    case "number":
      return 1;
    case "boolean":
      return true;
    case "array":
      return [];
    case "object":
      return Object.fromEntries(Object.entries(s.properties ?? {}).map(([k, v]) => [k, sample(v, depth + 1)]));
    default:
      return "fuzz";
  }
}

const HUGE = "x".repeat(100_000);

/** `problems` as a 400 carries them: a non-empty list of `{path, message}`, both text. */
const isProblemList = (value: unknown) =>
  Array.isArray(value) &&
  value.length > 0 &&
  value.every(
    (p) =>
      typeof p === "object" &&
      p !== null &&
      Object.keys(p).sort().join() === "message,path" &&
      typeof p.path === "string" &&
      typeof p.message === "string",
  );
const DEEP = JSON.parse(`${"[".repeat(5000)}${"]".repeat(5000)}`);

/** Odd strings for a path segment, already URL-encoded where they must be. */
const ODD_PATH_VALUES = [
  "%00",
  "a%00b",
  "%FF%FE",
  "%E0%A4%A",
  "..%2F..%2Fetc%2Fpasswd",
  "%27%20OR%20%271%27%3D%271",
  "%7B%7Btrigger.x%7D%7D",
  "%F0%9F%99%82",
  "%ED%A0%80",
  "-1",
  "null",
  "00000000-0000-0000-0000-000000000000",
  HUGE.slice(0, 7000),
];

/** Odd values for a query parameter, as raw strings. */
const ODD_QUERY_VALUES = ["\u0000", "a\u0000b", "\ud800", "-1", "1e309", "true", "[]", "{}", HUGE, "' OR 1=1 --"];

/** Wrong or hostile JSON values for a body field. */
const ODD_FIELD_VALUES: unknown[] = [
  123,
  -1,
  1e308,
  "string",
  true,
  null,
  [],
  [1, "a"],
  {},
  { nested: { deeper: true } },
  HUGE,
  "a\u0000b",
  "\ud800",
  { "key\u0000": 1 },
  DEEP,
];

/** Whole bodies that are not what any operation expects. */
const ODD_BODIES: { body: string; contentType?: string }[] = [
  { body: "{not json" },
  { body: "[]" },
  { body: '"text"' },
  { body: "123" },
  { body: "null" },
  { body: `${"[".repeat(100_000)}${"]".repeat(100_000)}` },
  { body: '{"a\\u0000":1}' },
  { body: '{"a":"\\ud800"}' },
  { body: "field=value", contentType: "application/x-www-form-urlencoded" },
  { body: "\u0000\u0001\u0002", contentType: "application/octet-stream" },
];

interface Case {
  label: string;
  path: string;
  query?: URLSearchParams;
  body?: string;
  contentType?: string;
  authenticated: boolean;
}

function fillPath(template: string, overrides: Record<string, string> = {}): string {
  return template.replace(/\{([^}]+)\}/g, (_, name: string) => overrides[name] ?? "fuzz-value-123");
}

function casesOf(template: string, method: string, operation: Operation): Case[] {
  const params = operation.parameters ?? [];
  const pathParams = params.filter((p) => p.in === "path");
  const queryParams = params.filter((p) => p.in === "query");
  const baseQuery = () =>
    new URLSearchParams(
      queryParams.filter((p) => p.required).map((p) => [p.name, String(sample(p.schema)) as string]) as [
        string,
        string,
      ][],
    );
  const bodySchema = resolve(operation.requestBody?.content?.["application/json"]?.schema);
  const hasBody = method !== "GET" && method !== "HEAD";
  const validBody = hasBody ? (sample(bodySchema) as Record<string, unknown>) : undefined;
  const json = (value: unknown) => (hasBody ? JSON.stringify(value) : undefined);
  const plain = { path: fillPath(template), query: baseQuery(), authenticated: true };
  const cases: Case[] = [
    { ...plain, label: "no credential", body: json(validBody), authenticated: false },
    { ...plain, label: "a valid-looking request", body: json(validBody) },
  ];
  for (const param of pathParams) {
    for (const value of ODD_PATH_VALUES) {
      cases.push({
        ...plain,
        label: `path ${param.name}=${value.slice(0, 40)}`,
        path: fillPath(template, { [param.name]: value }),
        body: json(validBody),
      });
    }
  }
  for (const param of queryParams) {
    for (const value of ODD_QUERY_VALUES) {
      const query = baseQuery();
      query.set(param.name, value);
      cases.push({
        ...plain,
        label: `query ${param.name}=${JSON.stringify(value).slice(0, 40)}`,
        query,
        body: json(validBody),
      });
    }
  }
  if (hasBody) {
    for (const field of Object.keys(bodySchema.properties ?? {})) {
      for (const value of ODD_FIELD_VALUES) {
        cases.push({
          ...plain,
          label: `body ${field}=${JSON.stringify(value)?.slice(0, 40)}`,
          body: JSON.stringify({ ...validBody, [field]: value }),
        });
      }
    }
    cases.push({ ...plain, label: "an unknown extra field", body: JSON.stringify({ ...validBody, extra: HUGE }) });
    for (const odd of ODD_BODIES) cases.push({ ...plain, label: `body ${odd.body.slice(0, 30)}`, ...odd });
  }
  return cases;
}

const operations = Object.entries(document.paths ?? {}).flatMap(([template, item]) =>
  Object.entries(item as Record<string, Operation>)
    .filter(([method]) => ["get", "post", "put", "patch", "delete"].includes(method))
    .map(([method, operation]) => ({ template, method: method.toUpperCase(), operation })),
);

for (const { backend, redis, label: name, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(`bad input to every operation on ${name}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;
    let token: string;
    let registry: StandInRegistry;
    beforeAll(async () => {
      // The registry mirror fills itself from this stand-in on its first request.
      registry = await startStandInRegistry();
      api = await startTestApi({ backend, redis, env: { MCP_REGISTRY_URL: registry.url } });
      token = (await signUp(api, "fuzz")).auth.auth_token;
    }, 60_000);
    afterAll(async () => {
      await api?.stop();
      await registry?.stop();
    });

    test("text no query could store is a 400 naming the field, in its text and as a problem", async () => {
      const cases: [string, RequestInit & { json?: unknown }, string, string, string][] = [
        [
          "/accounts/auth-with-password",
          { method: "POST", json: { email: "a\u0000@x.com", password: "x" } },
          "invalid input: email: must not contain NUL characters",
          "email",
          "must not contain NUL characters",
        ],
        [
          "/accounts/auth-with-password",
          { method: "POST", json: { email: "a@x.com", password: "\ud800" } },
          "invalid input: password: must be valid Unicode text",
          "password",
          "must be valid Unicode text",
        ],
        [
          "/accounts/api-keys",
          { method: "POST", json: { name: "k", allowed_paths: ["/a", { "b\u0000": 1 }] } },
          "invalid input: allowed_paths.1: a field name must not contain NUL characters",
          "allowed_paths.1",
          "a field name must not contain NUL characters",
        ],
        [
          "/accounts/api-keys",
          { method: "POST", json: { name: DEEP } },
          `invalid input: name${".0".repeat(63)}: nests deeper than 64 levels`,
          `name${".0".repeat(63)}`,
          "nests deeper than 64 levels",
        ],
        [
          "/accounts/api-keys/%00",
          { method: "DELETE", headers: bearer(token) },
          "invalid input: id: must not contain NUL characters",
          "id",
          "must not contain NUL characters",
        ],
      ];
      for (const [path, init, error, field, message] of cases) {
        const response = await api.request(path, init);
        expect({ path, status: response.status, body: await response.json() }).toEqual({
          path,
          status: 400,
          body: { error, problems: [{ path: field, message }] },
        });
      }
      const notUuid = await api.request("/accounts/api-keys/not-a-uuid", { method: "DELETE", headers: bearer(token) });
      expect(notUuid.status).toBe(400);
      expect(await notUuid.json()).toEqual({
        error: "invalid input: id: must be a UUID",
        problems: [{ path: "id", message: "must be a UUID" }],
      });
    });

    test("bytes that are not UTF-8 and numbers beyond a double are 400s, never stored changed", async () => {
      const auth = { ...bearer(token), "content-type": "application/json" };
      // `{"value":"caf<0xE9>"}`: Latin-1, not UTF-8. Replacing the byte would store another value.
      const latin1 = new Uint8Array([...Buffer.from('{"value":"caf'), 0xe9, ...Buffer.from('"}')]);
      const cases: [string, RequestInit, number, unknown][] = [
        [
          "/secrets/latin1",
          { method: "PUT", headers: auth, body: latin1 },
          400,
          { error: "request body is not valid UTF-8" },
        ],
        [
          "/secrets/huge",
          { method: "PUT", headers: auth, body: '{"value":"x","n":1e400}' },
          400,
          {
            error: "invalid input: n: must be a number a double can hold",
            problems: [{ path: "n", message: "must be a number a double can hold" }],
          },
        ],
        ["/storage/kv/b", { method: "PUT", headers: auth, body: latin1 }, 400, { error: "validation_error" }],
        [
          "/accounts/remove-user",
          { method: "DELETE", headers: auth, body: latin1 },
          400,
          { error: "request body is not valid UTF-8" },
        ],
      ];
      for (const [path, init, status, body] of cases) {
        const response = await api.request(path, init);
        expect({ path, status: response.status, body: await response.json() }).toEqual({ path, status, body });
      }
      expect((await api.request("/secrets/latin1", { headers: bearer(token) })).status).toBe(404);

      const trpc = await api.request("/trpc/secrets.put", { method: "POST", headers: auth, body: latin1 });
      expect(trpc.status).toBe(400);
      expect(((await trpc.json()) as { error: unknown }).error).toMatchObject({
        message: "request body is not valid UTF-8",
        data: { code: "BAD_REQUEST", domainCode: "validation_error" },
      });
      const huge = await api.request("/trpc/secrets.put", {
        method: "POST",
        headers: auth,
        body: '{"key":"k","value":"v","n":-1e400}',
      });
      expect(((await huge.json()) as { error: unknown }).error).toMatchObject({
        message: "invalid input: n: must be a number a double can hold",
        data: { problems: [{ path: "n", message: "must be a number a double can hold" }] },
      });

      const flow = "0194e0d0-0000-7000-8000-000000000000";
      const byHand = await api.request(`/flows/${flow}/runs`, { method: "POST", headers: auth, body: latin1 });
      expect({ status: byHand.status, body: await byHand.json() }).toEqual({
        status: 400,
        body: { error: "request body is not valid UTF-8" },
      });
    });

    test("a field POST /events does not know is a 400 naming it, as a flow's or a node template's is", async () => {
      const auth = bearer(token);
      const misspelt = await api.request("/events", {
        method: "POST",
        headers: auth,
        json: { key: "k", dta: { a: 1 } },
      });
      expect({ status: misspelt.status, body: await misspelt.json() }).toEqual({
        status: 400,
        body: {
          error: 'invalid input: body: Unrecognized key: "dta"',
          problems: [{ path: "", message: 'Unrecognized key: "dta"' }],
        },
      });
      const trpc = await api.request("/trpc/runs.sendEvent", {
        method: "POST",
        headers: auth,
        json: { key: "k", data: null, account_id: "someone else's" },
      });
      expect(((await trpc.json()) as { error: { message: string } }).error.message).toBe(
        'invalid input: body: Unrecognized key: "account_id"',
      );
      // Whatever `data` holds is the event's, passed on as sent.
      const sent = await api.request("/events", {
        method: "POST",
        headers: auth,
        json: { key: "k", data: { any: 1 } },
      });
      expect({ status: sent.status, body: await sent.json() }).toEqual({ status: 200, body: { data: { resumed: 0 } } });
    });

    test("the document lists the operations this test sends bad input to", () => {
      expect(operations.length).toBeGreaterThan(15);
    });

    for (const { template, method, operation } of operations) {
      const key = `${method} ${template}`;
      test(`${key}: answers bad input with a 4xx in the documented shape`, async () => {
        const problems: string[] = [];
        const cases = casesOf(template, method, operation);
        const send = async (c: Case) => {
          const headers: Record<string, string> = c.authenticated ? bearer(token) : {};
          if (c.body !== undefined) headers["content-type"] = c.contentType ?? "application/json";
          const query = c.query?.toString();
          const response = await api.request(`${c.path}${query ? `?${query}` : ""}`, {
            method,
            headers,
            body: c.body,
          });
          const text = await response.text();
          if (response.status >= 500) {
            problems.push(`${c.label}: ${response.status} ${text.slice(0, 200)}`);
            return;
          }
          if (response.status < 400) return;
          // A request line and headers over 16 KiB are refused by Bun's HTTP parser itself,
          // before any route, with 431 and no body (documented in the OpenAPI description).
          if (response.status === 431 && text === "") return;
          let body: unknown;
          try {
            body = JSON.parse(text);
          } catch {
            problems.push(`${c.label}: ${response.status} with a body that is not JSON: ${text.slice(0, 100)}`);
            return;
          }
          const metrics = template.startsWith("/monitoring");
          const { problems: named, ...rest } = body as { problems?: unknown };
          const shaped = metrics
            ? typeof (rest as { message?: unknown }).message === "string" && (rest as { data?: unknown }).data === null
            : typeof (rest as { error?: unknown }).error === "string" && Object.keys(rest).length === 1;
          if (!shaped) problems.push(`${c.label}: ${response.status} ${text.slice(0, 200)}`);
          // Only invalid input names its problems, each a field's path and what is wrong with it.
          if (named !== undefined && !(response.status === 400 && isProblemList(named))) {
            problems.push(`${c.label}: ${response.status} with problems ${text.slice(0, 200)}`);
          }
          // And every refusal whose text lists fields carries them as data too.
          const said =
            (rest as { error?: unknown; message?: unknown }).error ?? (rest as { message?: unknown }).message;
          if (named === undefined && typeof said === "string" && said.startsWith("invalid input: ")) {
            problems.push(`${c.label}: ${response.status} without problems ${text.slice(0, 200)}`);
          }
          if (/\bat \S+ \(|node_modules|\.ts:\d+/.test(text))
            problems.push(`${c.label}: a stack in ${text.slice(0, 200)}`);
        };
        // A few at a time: the same load as a handful of careless clients.
        for (let i = 0; i < cases.length; i += 8) await Promise.all(cases.slice(i, i + 8).map(send));
        expect(problems).toEqual([]);
      });
    }
  });
}
