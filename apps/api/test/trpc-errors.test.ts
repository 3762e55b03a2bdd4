import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { AppRouter } from "@platform/core";
import { createTRPCClient, httpLink, TRPCClientError } from "@trpc/client";
import { bearer, PASSWORD, readBody, signUp, uniqueEmail } from "./accounts-helpers.ts";
import { runModes, startTestApi, type TestApi } from "./harness.ts";

type Failure = TRPCClientError<AppRouter>;

/** What a tRPC call failed with, as a tRPC client sees it. */
async function failureOf(call: Promise<unknown>): Promise<Failure> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(TRPCClientError);
  return error as Failure;
}

/** The parts of a failure a tRPC client reads: tRPC's code (named and JSON-RPC), the message, the domain code. */
function seen(failure: Failure) {
  return {
    code: failure.data?.code,
    jsonRpc: failure.shape?.code,
    message: failure.message,
    httpStatus: failure.data?.httpStatus,
    domainCode: (failure.data as { domainCode?: string } | undefined)?.domainCode,
  };
}

/** A header of the HTTP answer the failure came in. */
const headerOf = (failure: Failure, name: string) =>
  (failure.meta?.response as Response | undefined)?.headers.get(name) ?? null;

for (const { backend, redis, label, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(`tRPC errors on ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;
    beforeAll(async () => {
      api = await startTestApi({ backend, redis, env: { LOGIN_FAILURES_PER_PAIR: "2" } });
    }, 60_000);
    afterAll(() => api.stop());

    const clientWith = (headers: Record<string, string> = {}) =>
      createTRPCClient<AppRouter>({ links: [httpLink({ url: `${api.url}/trpc`, headers })] });

    test("without a credential: UNAUTHORIZED, with the REST message and nothing internal in the body", async () => {
      const failure = await failureOf(clientWith().secrets.get.query({ key: "db" }));
      expect(seen(failure)).toEqual({
        code: "UNAUTHORIZED",
        jsonRpc: -32001,
        message: "missing credential",
        httpStatus: 401,
        domainCode: "unauthorized",
      });
      expect(Object.keys(failure.data ?? {}).sort()).toEqual(["code", "domainCode", "httpStatus", "path"]);
    });

    test("an API key outside its allowed paths: FORBIDDEN", async () => {
      const owner = await signUp(api, "trpc-forbidden");
      const created = await api.request("/accounts/api-keys", {
        method: "POST",
        headers: bearer(owner.auth.auth_token),
        json: { name: "reader", allowed_paths: ["/accounts/users"] },
      });
      const { data } = await readBody(created);
      const failure = await failureOf(clientWith({ "x-api-key": data.key }).accounts.prices.list.query());
      expect(seen(failure)).toEqual({
        code: "FORBIDDEN",
        jsonRpc: -32003,
        message: "this API key is not allowed on this path",
        httpStatus: 403,
        domainCode: "forbidden",
      });
    });

    test("a missing secret and a missing bucket: NOT_FOUND with the error's own words", async () => {
      const owner = await signUp(api, "trpc-missing");
      const client = clientWith(bearer(owner.auth.auth_token));
      expect(seen(await failureOf(client.secrets.get.query({ key: "nope" })))).toEqual({
        code: "NOT_FOUND",
        jsonRpc: -32004,
        message: "resource not found",
        httpStatus: 404,
        domainCode: "not_found",
      });
      // REST answers storage's code text (`{"error":"not_found"}`); tRPC keeps the sentence.
      const bucket = await failureOf(client.storage.kv.get.query({ bucket: "nowhere" }));
      expect([bucket.data?.code, bucket.message]).toEqual(["NOT_FOUND", "bucket not found"]);
    });

    test("a KV compare-and-set that lost: CONFLICT, with the current revision as REST sends it", async () => {
      const owner = await signUp(api, "trpc-conflict");
      const client = clientWith(bearer(owner.auth.auth_token));
      await client.storage.kv.put.mutate({ bucket: "locks", description: "x" });
      const first = await client.storage.kv.keys.put.mutate({ bucket: "locks", key: "a", value: 1, revision: 0 });
      const failure = await failureOf(
        client.storage.kv.keys.put.mutate({ bucket: "locks", key: "a", value: 2, revision: 0 }),
      );
      expect(seen(failure)).toEqual({
        code: "CONFLICT",
        jsonRpc: -32009,
        message: `the key is at revision ${first.revision}, not 0`,
        httpStatus: 409,
        domainCode: "conflict",
      });
      expect(headerOf(failure, "x-current-revision")).toBe(String(first.revision));
    });

    test("sign-in failures past the limit: TOO_MANY_REQUESTS with Retry-After", async () => {
      const { email } = await signUp(api, "trpc-limited");
      const client = clientWith();
      for (let attempt = 0; attempt < 2; attempt++) {
        const refused = await failureOf(client.accounts.authWithPassword.mutate({ email, password: "wrong password" }));
        expect([refused.data?.code, refused.message]).toEqual(["UNAUTHORIZED", "invalid email or password"]);
      }
      const failure = await failureOf(client.accounts.authWithPassword.mutate({ email, password: PASSWORD }));
      expect(seen(failure)).toEqual({
        code: "TOO_MANY_REQUESTS",
        jsonRpc: -32029,
        message: "too many attempts; try again later",
        httpStatus: 429,
        domainCode: "rate_limited",
      });
      expect(Number(headerOf(failure, "retry-after"))).toBeGreaterThanOrEqual(1);
    });

    test("invalid input: BAD_REQUEST with one readable message naming the field, and its problems as data, as REST says them", async () => {
      const input = { email: "not an email", password: PASSWORD, account_name: "acme" };
      const failure = await failureOf(clientWith().accounts.signup.mutate(input));
      expect(seen(failure)).toEqual({
        code: "BAD_REQUEST",
        jsonRpc: -32600,
        message: "invalid input: email: must be an email address",
        httpStatus: 400,
        domainCode: "validation_error",
      });
      const problems = [{ path: "email", message: "must be an email address" }];
      expect(failure.data?.problems).toEqual(problems);
      const rest = await api.request("/accounts/signup", { method: "POST", json: input });
      expect(await readBody(rest)).toEqual({ error: "invalid input: email: must be an email address", problems });

      // A service's own refusal travels the same way: a mapping to a flow the account does not have.
      const owner = await signUp(api, "trpc-problems");
      const gateway = { name: "g" };
      const created = await readBody(
        await api.request("/gateway", { method: "POST", headers: bearer(owner.auth.auth_token), json: gateway }),
      );
      const mapping = { method: "GET" as const, path: "/x", flow_id: crypto.randomUUID() };
      const noFlow = [{ path: "flow_id", message: "the account has no flow with this id" }];
      const refused = await failureOf(
        clientWith(bearer(owner.auth.auth_token)).gateway.mappings.create.mutate({
          gateway_topic: created.metadata.subject,
          ...mapping,
        }),
      );
      expect([refused.message, refused.data?.problems]).toEqual([
        "invalid input: flow_id: the account has no flow with this id",
        noFlow,
      ]);
      const overRest = await api.request(`/gateway/${created.metadata.subject}/mapping`, {
        method: "POST",
        headers: bearer(owner.auth.auth_token),
        json: mapping,
      });
      expect({ status: overRest.status, body: await readBody(overRest) }).toEqual({
        status: 400,
        body: { error: "invalid input: flow_id: the account has no flow with this id", problems: noFlow },
      });
    });

    test("an unknown procedure: NOT_FOUND", async () => {
      const response = await api.request("/trpc/secrets.nothing");
      expect(response.status).toBe(404);
      expect(response.headers.get("content-type")).toStartWith("application/json");
      const body = await readBody(response);
      expect(body.error).toMatchObject({
        code: -32004,
        message: 'no procedure found on path "secrets.nothing"',
        data: { code: "NOT_FOUND", httpStatus: 404, domainCode: "not_found" },
      });
    });
  });
}

describe.skipIf(Boolean(runModes()[0]?.skip))("HTTP methods and content types", () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi({ backend: runModes()[0]?.backend ?? "pglite" });
  }, 60_000);
  afterAll(() => api.stop());

  test("HEAD answers as GET would, status and headers, without a body", async () => {
    const { auth } = await signUp(api, "head");
    const cases: [string, Record<string, string>][] = [
      ["/healthz", {}],
      ["/secrets/db", {}],
      ["/secrets/db", bearer(auth.auth_token)],
      ["/no/such/path", {}],
      ["/trpc/secrets.get?input=%7B%22key%22%3A%22db%22%7D", {}],
      ["/webhooks/wh_nothing", {}],
      ["/gw/nothing/x", {}],
    ];
    for (const [path, headers] of cases) {
      const get = await api.request(path, { headers });
      const getBody = await get.text();
      const head = await api.request(path, { method: "HEAD", headers });
      expect([path, head.status]).toEqual([path, get.status]);
      expect(await head.text()).toBe("");
      for (const name of ["content-type", "content-length", "cache-control"]) {
        expect([path, name, head.headers.get(name)]).toEqual([path, name, get.headers.get(name)]);
      }
      expect(Number(head.headers.get("content-length"))).toBe(getBody.length);
    }
    expect((await api.request("/secrets/db", { method: "HEAD" })).status).toBe(401);
  });

  test("OPTIONS on a tRPC path is 204 with the methods tRPC accepts", async () => {
    const response = await api.request("/trpc/secrets.get", { method: "OPTIONS" });
    expect(response.status).toBe(204);
    expect(response.headers.get("allow")).toBe("GET, POST, OPTIONS");
    expect(await response.text()).toBe("");
  });

  test("a body that is not JSON is 415, labelled as the JSON it is, over tRPC and REST", async () => {
    const { auth } = await signUp(api, "media");
    const headers = { ...bearer(auth.auth_token), "content-type": "text/plain" };
    const trpc = await api.request("/trpc/secrets.put", { method: "POST", headers, body: "key=a" });
    expect(trpc.status).toBe(415);
    expect(trpc.headers.get("content-type")).toStartWith("application/json");
    expect((await readBody(trpc)).error).toMatchObject({
      code: -32015,
      message: "unsupported content type text/plain: send application/json",
      data: { code: "UNSUPPORTED_MEDIA_TYPE", httpStatus: 415, domainCode: "unsupported_media_type" },
    });

    const rest = await api.request("/secrets/a", { method: "PUT", headers, body: "value=b" });
    expect(rest.status).toBe(415);
    expect(rest.headers.get("content-type")).toStartWith("application/json");
    expect(await readBody(rest)).toEqual({ error: "unsupported content type text/plain: send application/json" });
  });

  test("a body sent with no content type is 415 too, and says so", async () => {
    const response = await api.request("/trpc/accounts.signup", {
      method: "POST",
      body: new Blob([JSON.stringify({ email: uniqueEmail("no-type"), password: PASSWORD, account_name: "x" })]),
    });
    expect(response.status).toBe(415);
    expect(response.headers.get("content-type")).toStartWith("application/json");
    expect((await readBody(response)).error.message).toBe("missing content type: send application/json");
  });
});
