import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { totpCodeFromUrl } from "@platform/core/testing";
import { freeLoopbackPort } from "@platform/db/testing";
import { TRPCClientError } from "@trpc/client";
import { signUp } from "../../../apps/api/test/accounts-helpers.ts";
import { startTestApi, type TestApi } from "../../../apps/api/test/harness.ts";
import { createPlatformClient, PlatformError, type PlatformTokens } from "../src/index.ts";

/** A fetch that records every request the client makes and the request id of every answer. */
function recordingFetch() {
  const requests: { path: string; headers: Headers }[] = [];
  const requestIds: string[] = [];
  const fetch = async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(input instanceof Request ? input.url : input);
    requests.push({ path: url.pathname, headers: new Headers(init?.headers) });
    const response = await globalThis.fetch(input, init);
    requestIds.push(response.headers.get("x-request-id") ?? "");
    return response;
  };
  const paths = () => requests.map((r) => r.path);
  return { fetch, requests, requestIds, paths };
}

async function failure(promise: Promise<unknown>): Promise<PlatformError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(PlatformError);
    return error as PlatformError;
  }
  throw new Error("expected the call to fail");
}

describe("the TypeScript client against the real server", () => {
  let api: TestApi;
  beforeAll(async () => {
    // No grace for a second presentation of a refresh token: a spent one is refused at once.
    api = await startTestApi({ backend: "pglite", env: { REFRESH_REUSE_GRACE_S: "0" } });
  }, 60_000);
  afterAll(() => api.stop());

  test("signs in with a password and makes typed calls across areas", async () => {
    const owner = await signUp(api, "client-areas");
    const tokens: PlatformTokens[] = [];
    const client = createPlatformClient({
      url: `${api.url}/`,
      email: owner.email,
      password: owner.password,
      onTokens: (t) => {
        tokens.push(t);
      },
    });

    expect(await client.secrets.put.mutate({ key: "stripe-key", value: "sk_live_1" })).toEqual({ message: "success" });
    expect(await client.secrets.get.query({ key: "stripe-key" })).toEqual({ key: "stripe-key", value: "sk_live_1" });
    expect((await client.secrets.list.query()).data.map((s) => s.key)).toEqual(["stripe-key"]);

    await client.storage.kv.put.mutate({ bucket: "settings", description: "app settings" });
    const written = await client.storage.kv.keys.put.mutate({
      bucket: "settings",
      key: "theme",
      value: { dark: true },
    });
    expect(written.revision).toBeGreaterThan(0);
    const read = await client.storage.kv.keys.get.query({ bucket: "settings", key: "theme" });
    expect(read).toMatchObject({ key: "theme", value: { dark: true }, revision: written.revision });

    await client.storage.streams.put.mutate({ name: "orders" });
    await client.storage.streams.publish.mutate({
      name: "orders",
      stream: "orders",
      subject: "orders.eu.created",
      body: { id: 42 },
    });
    const messages = await client.storage.streams.list.query({ name: "orders" });
    expect(messages.data.map((m) => [m.seq, m.subject, m.body])).toEqual([[1, "orders.eu.created", { id: 42 }]]);

    const users = await client.accounts.users.list.query();
    expect(users.data.map((u) => u.email)).toEqual([owner.email]);

    // One sign-in served every call, and the caller was handed its tokens.
    expect(tokens).toHaveLength(1);
    expect(tokens[0]?.refreshToken).toStartWith("rt_");
    expect(tokens[0]?.accessTokenExpiresAt).toBeGreaterThan(Date.now());
  });

  test("starts from a kept refresh token and hands over its successor", async () => {
    const owner = await signUp(api, "client-refresh-token");
    const tokens: PlatformTokens[] = [];
    const client = createPlatformClient({
      url: api.url,
      refreshToken: owner.auth.refresh_token,
      onTokens: (t) => {
        tokens.push(t);
      },
    });
    expect((await client.secrets.list.query()).data).toEqual([]);
    expect(tokens).toHaveLength(1);
    expect(tokens[0]?.refreshToken).not.toBe(owner.auth.refresh_token);
    // The kept token was spent: the successor is the one to keep.
    const again = createPlatformClient({ url: api.url, refreshToken: owner.auth.refresh_token });
    const spent = await failure(again.secrets.list.query());
    expect([spent.status, spent.message]).toEqual([401, "refresh token was already used; sign in again"]);
  });

  test("starts from kept tokens without refreshing while the access token is fresh", async () => {
    const owner = await signUp(api, "client-kept-tokens");
    const recorder = recordingFetch();
    const client = createPlatformClient({
      url: api.url,
      refreshToken: owner.auth.refresh_token,
      accessToken: owner.auth.auth_token,
      fetch: recorder.fetch,
    });
    expect((await client.secrets.list.query()).data).toEqual([]);
    expect(recorder.paths()).toEqual(["/trpc/secrets.list"]);
    expect(recorder.requests[0]?.headers.get("authorization")).toBe(`Bearer ${owner.auth.auth_token}`);
  });

  test("signs in with a TOTP code when the account has one, and says so when none is given", async () => {
    const owner = await signUp(api, "client-totp");
    const setup = createPlatformClient({ url: api.url, refreshToken: owner.auth.refresh_token });
    const { data } = await setup.accounts.totp.setup.mutate({});
    const confirmedAt = Date.now();
    await setup.accounts.totp.verify.mutate({ code: totpCodeFromUrl(data.otpauth_url, confirmedAt) });

    // A code is accepted once: the next one is asked for when the client signs in.
    const client = createPlatformClient({
      url: api.url,
      email: owner.email,
      password: owner.password,
      totp: () => totpCodeFromUrl(data.otpauth_url, confirmedAt + 30_000),
    });
    expect((await client.secrets.list.query()).data).toEqual([]);

    const without = createPlatformClient({ url: api.url, email: owner.email, password: owner.password });
    const refused = await failure(without.secrets.list.query());
    expect([refused.status, refused.message]).toEqual([401, "a second factor is required (totp): pass totp"]);
  });

  test("signs in again with its password when its session was ended", async () => {
    const owner = await signUp(api, "client-ended");
    const tokens: PlatformTokens[] = [];
    const client = createPlatformClient({
      url: api.url,
      email: owner.email,
      password: owner.password,
      onTokens: (t) => {
        tokens.push(t);
      },
    });
    await client.secrets.put.mutate({ key: "k", value: "v" });
    await client.accounts.logout.mutate({ refresh_token: tokens[0]?.refreshToken ?? "" });
    // The access token is refused, the refresh token too: a new sign-in carries the call.
    expect(await client.secrets.get.query({ key: "k" })).toEqual({ key: "k", value: "v" });
    expect(tokens).toHaveLength(2);
  });

  test("uses an API key as it is, and never refreshes", async () => {
    const owner = await signUp(api, "client-api-key");
    const admin = createPlatformClient({ url: api.url, refreshToken: owner.auth.refresh_token });
    const created = await admin.accounts.apiKeys.create.mutate({ name: "ci", allowed_paths: ["/secrets*"] });
    const recorder = recordingFetch();
    const client = createPlatformClient({ url: api.url, apiKey: created.data.key, fetch: recorder.fetch });

    await client.secrets.put.mutate({ key: "from-ci", value: "v" });
    expect(await client.secrets.get.query({ key: "from-ci" })).toEqual({ key: "from-ci", value: "v" });
    const refused = await failure(client.accounts.prices.list.query());
    expect([refused.status, refused.code, refused.message]).toEqual([
      403,
      "forbidden",
      "this API key is not allowed on this path",
    ]);
    expect(recorder.paths()).toEqual(["/trpc/secrets.put", "/trpc/secrets.get", "/trpc/accounts.prices.list"]);
    for (const { headers } of recorder.requests) {
      expect(headers.get("x-api-key")).toBe(created.data.key);
      expect(headers.get("authorization")).toBeNull();
    }
  });

  test("maps failures to PlatformError with the status, the server's text and the request id", async () => {
    const owner = await signUp(api, "client-errors");
    const recorder = recordingFetch();
    const client = createPlatformClient({
      url: api.url,
      refreshToken: owner.auth.refresh_token,
      fetch: recorder.fetch,
    });

    const missing = await failure(client.secrets.get.query({ key: "nope" }));
    expect([missing.status, missing.code, missing.message]).toEqual([404, "not_found", "resource not found"]);
    expect(missing.requestId).toBe(recorder.requestIds.at(-1) ?? "");
    expect(missing.requestId).toMatch(/^[0-9a-f-]{36}$/);
    // Still a tRPC error, for code written against @trpc/client.
    expect(missing).toBeInstanceOf(TRPCClientError);

    const invalid = await failure(client.secrets.put.mutate({ key: "no spaces allowed", value: "x" }));
    expect([invalid.status, invalid.code]).toEqual([400, "validation_error"]);
    expect(invalid.message).toStartWith("invalid input: key: ");
    // What is wrong, as data: the field and what to fix, as the message says it.
    expect(invalid.problems).toEqual([{ path: "key", message: invalid.message.slice("invalid input: key: ".length) }]);
    expect(missing.problems).toEqual([]);
    // Over tRPC, storage says what is wrong where REST answers only the spec's code text.
    const storage = await failure(client.storage.kv.put.mutate({ bucket: "no spaces allowed", description: "x" }));
    expect([storage.status, storage.code]).toEqual([400, "validation_error"]);
    expect(storage.message).toStartWith("invalid input: bucket: ");
    expect(storage.problems.map(({ path }) => path)).toEqual(["bucket"]);

    const wrongPassword = createPlatformClient({ url: api.url, email: owner.email, password: "not the password" });
    const refused = await failure(wrongPassword.secrets.list.query());
    expect([refused.status, refused.code, refused.message]).toEqual([401, "unauthorized", "invalid email or password"]);
    // Sign-in goes over REST: its refusals name their problems the same way.
    const notAnEmail = createPlatformClient({ url: api.url, email: "nul\u0000@example.com", password: "x" });
    const malformed = await failure(notAnEmail.secrets.list.query());
    expect([malformed.status, malformed.problems.map(({ path }) => path)]).toEqual([400, ["email"]]);
    expect(refused.requestId).toMatch(/^[0-9a-f-]{36}$/);

    const nowhere = createPlatformClient({ url: `http://127.0.0.1:${await freeLoopbackPort()}`, apiKey: "wfk_x" });
    const unreachable = await failure(nowhere.secrets.list.query());
    expect([unreachable.status, unreachable.code, unreachable.requestId]).toEqual([0, "network_error", null]);
  });
});

describe("the client's token refresh against the real server", () => {
  const TTL_SECONDS = 10;
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi({ backend: "pglite", env: { ACCESS_TOKEN_TTL_SECONDS: String(TTL_SECONDS) } });
  }, 60_000);
  afterAll(() => api.stop());

  /** Resolves once the server refuses `token` as expired. */
  async function expired(token: string): Promise<void> {
    for (;;) {
      const response = await api.request("/secrets", { headers: { authorization: `Bearer ${token}` } });
      if (response.status === 401) {
        expect(await response.json()).toEqual({ error: "access token expired" });
        return;
      }
      await Bun.sleep(500);
    }
  }

  test(
    "20 concurrent calls with an expired access token make one refresh, before the calls or after their 401s",
    async () => {
      // Two sign-ins: one client judges expiry by the real clock, the other's clock is stopped
      // at sign-in, so it learns of the expiry only from the server's 401s.
      const setUp = async (tag: string, now?: () => number) => {
        const owner = await signUp(api, tag);
        const recorder = recordingFetch();
        const tokens: PlatformTokens[] = [];
        const client = createPlatformClient({
          url: api.url,
          email: owner.email,
          password: owner.password,
          fetch: recorder.fetch,
          now,
          onTokens: (t) => {
            tokens.push(t);
          },
        });
        await client.secrets.put.mutate({ key: "k", value: tag });
        return { client, recorder, tokens };
      };
      const signedInAt = Date.now();
      const proactive = await setUp("client-proactive");
      const reactive = await setUp("client-reactive", () => signedInAt);
      await expired(reactive.tokens[0]?.accessToken ?? "");
      await expired(proactive.tokens[0]?.accessToken ?? "");

      for (const { client, recorder, tokens } of [proactive, reactive]) {
        const before = recorder.requests.length;
        const results = await Promise.all(Array.from({ length: 20 }, () => client.secrets.get.query({ key: "k" })));
        expect(results.every((r) => r.key === "k")).toBe(true);
        const paths = recorder.paths().slice(before);
        expect(paths.filter((p) => p === "/accounts/refresh")).toHaveLength(1);
        expect(tokens).toHaveLength(2);
        // The session was not ended by a second use of the refresh token: calls go on working.
        expect((await client.secrets.get.query({ key: "k" })).key).toBe("k");
      }
      // The stopped clock's client sent each call once with the old token, then once with the new.
      const reactivePaths = reactive.recorder.paths();
      expect(reactivePaths.filter((p) => p === "/trpc/secrets.get")).toHaveLength(41);
      const proactivePaths = proactive.recorder.paths();
      expect(proactivePaths.filter((p) => p === "/trpc/secrets.get")).toHaveLength(21);
    },
    { timeout: 60_000 },
  );
});
