import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { AppRouter } from "@platform/core";
import { createTRPCClient, httpLink, TRPCClientError } from "@trpc/client";
import { bearer, readBody, signUp } from "./accounts-helpers.ts";
import { runModes, startTestApi, type TestApi } from "./harness.ts";
import { invalidInput } from "./invalid-input.ts";

const KEY_RULE = invalidInput(["key", "must be 1-128 letters, digits, _ or - (case-sensitive)"]);

for (const { backend, redis, label, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(`secrets on ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;
    let owner: Record<string, string>;
    let accountId: string;
    beforeAll(async () => {
      api = await startTestApi({ backend, redis, captureLogs: "trace" });
      const { auth } = await signUp(api, "vault");
      owner = bearer(auth.auth_token);
      accountId = auth.account.id;
    }, 60_000);
    afterAll(() => api.stop());

    const put = (key: string, body: unknown, headers = owner) =>
      api.request(`/secrets/${key}`, { method: "PUT", headers, json: body });
    const get = (key: string, headers = owner) => api.request(`/secrets/${key}`, { headers });
    const remove = (key: string, headers = owner) => api.request(`/secrets/${key}`, { method: "DELETE", headers });
    const list = (headers = owner) => api.request("/secrets", { headers });
    const rawValue = async (key: string, account = accountId) =>
      (
        await api.services.db
          .selectFrom("secrets")
          .select("value")
          .where("account_id", "=", account)
          .where("key", "=", key)
          .executeTakeFirstOrThrow()
      ).value;

    test("a secret written is read back as the spec's {key, value}, and a second write replaces it", async () => {
      const first = await put("stripe_API-key", { value: "sk_live_first" });
      expect(first.status).toBe(200);
      expect(await readBody(first)).toEqual({ message: "success" });
      const read = await get("stripe_API-key");
      expect(read.status).toBe(200);
      expect(await readBody(read)).toEqual({ key: "stripe_API-key", value: "sk_live_first" });

      expect((await put("stripe_API-key", { value: "sk_live second ✓" })).status).toBe(200);
      expect(await readBody(await get("stripe_API-key"))).toEqual({
        key: "stripe_API-key",
        value: "sk_live second ✓",
      });
      // Keys are case-sensitive: another case is another secret.
      expect(await readBody(await get("STRIPE_API-KEY"))).toEqual({ error: "resource not found" });
    });

    test("the list names every key, sorted, with when it was last written, and never a value", async () => {
      const { auth } = await signUp(api, "lister");
      const headers = bearer(auth.auth_token);
      const empty = await list(headers);
      expect(empty.status).toBe(200);
      expect(await readBody(empty)).toEqual({ data: [] });

      const before = Math.floor(Date.now() / 1000);
      for (const key of ["zeta", "alpha", "Mid"])
        expect((await put(key, { value: `value-of-${key}` }, headers)).status).toBe(200);
      const after = Math.ceil(Date.now() / 1000);
      const listed = await list(headers);
      const text = await listed.text();
      expect(text).not.toContain("value-of-");
      const { data } = JSON.parse(text) as { data: { key: string; modified: number }[] };
      expect(data.map((entry) => entry.key)).toEqual(["Mid", "alpha", "zeta"]);
      for (const entry of data) {
        expect(Object.keys(entry).sort()).toEqual(["key", "modified"]);
        expect(Number.isInteger(entry.modified)).toBe(true);
        expect(entry.modified).toBeGreaterThanOrEqual(before - 1);
        expect(entry.modified).toBeLessThanOrEqual(after + 1);
      }
    });

    test("a deleted secret is gone: reading or deleting it again is 404 resource not found", async () => {
      await put("short-lived", { value: "bye" });
      const deleted = await remove("short-lived");
      expect(deleted.status).toBe(200);
      expect(await readBody(deleted)).toEqual({ message: "success" });
      for (const response of [await get("short-lived"), await remove("short-lived")]) {
        expect(response.status).toBe(404);
        expect(await readBody(response)).toEqual({ error: "resource not found" });
      }
      expect((await readBody(await list())).data.map((e: { key: string }) => e.key)).not.toContain("short-lived");
    });

    test("keys outside the documented rule are 400 on every operation", async () => {
      const bad = ["a.b", "with%20space", "slash%2Fin", "%C3%A9t%C3%A9", "x".repeat(129)];
      for (const key of bad) {
        for (const response of [await put(key, { value: "v" }), await get(key), await remove(key)]) {
          expect(response.status).toBe(400);
          expect(await readBody(response)).toEqual(KEY_RULE);
        }
      }
      // The guard every procedure goes through refuses a NUL before the key rule is read.
      const nul = await get("nul%00");
      expect(nul.status).toBe(400);
      expect(await readBody(nul)).toEqual(invalidInput(["key", "must not contain NUL characters"]));
      const badEncoding = await get("a%ZZ");
      expect(badEncoding.status).toBe(400);
      expect(await readBody(badEncoding)).toEqual(invalidInput(["key", "is not valid URL encoding"]));
      // The longest key allowed works.
      expect((await put("k".repeat(128), { value: "v" })).status).toBe(200);
      expect(await readBody(await get("k".repeat(128)))).toEqual({ key: "k".repeat(128), value: "v" });
    });

    test("values are non-empty strings of at most 65,536 bytes", async () => {
      const cases: [unknown, string][] = [
        [{}, "is required"],
        [{ value: 42 }, "must be a string"],
        [{ value: { nested: "x" } }, "must be a string"],
        [{ value: "" }, "must not be empty"],
        [{ value: "x".repeat(65_537) }, "must be at most 65536 bytes"],
        // 32,769 characters, but 65,538 bytes in UTF-8.
        [{ value: "é".repeat(32_769) }, "must be at most 65536 bytes"],
      ];
      for (const [body, message] of cases) {
        const response = await put("sized", body);
        expect(response.status).toBe(400);
        expect(await readBody(response)).toEqual(invalidInput(["value", message]));
      }
      expect(await readBody(await get("sized"))).toEqual({ error: "resource not found" });
      const largest = "é".repeat(32_768);
      expect((await put("sized", { value: largest })).status).toBe(200);
      expect(await readBody(await get("sized"))).toEqual({ key: "sized", value: largest });
    });

    test("every operation needs a credential", async () => {
      const responses = [
        await api.request("/secrets/any", { method: "PUT", json: { value: "x" } }),
        await api.request("/secrets/any"),
        await api.request("/secrets/any", { method: "DELETE" }),
        await api.request("/secrets"),
      ];
      for (const response of responses) {
        expect(response.status).toBe(401);
        expect(await readBody(response)).toEqual({ error: "missing credential" });
      }
    });

    test("another account sees none of this account's secrets, and its own key of the same name is its own", async () => {
      await put("shared-name", { value: "owned by A" });
      const { auth } = await signUp(api, "intruder");
      const other = bearer(auth.auth_token);
      for (const response of [await get("shared-name", other), await remove("shared-name", other)]) {
        expect(response.status).toBe(404);
        expect(await readBody(response)).toEqual({ error: "resource not found" });
      }
      expect(await readBody(await list(other))).toEqual({ data: [] });

      expect((await put("shared-name", { value: "owned by B" }, other)).status).toBe(200);
      expect(await readBody(await get("shared-name", other))).toEqual({ key: "shared-name", value: "owned by B" });
      expect(await readBody(await get("shared-name"))).toEqual({ key: "shared-name", value: "owned by A" });
      expect((await remove("shared-name", other)).status).toBe(200);
      expect(await readBody(await get("shared-name"))).toEqual({ key: "shared-name", value: "owned by A" });
    });

    test("a value that cannot be opened is 500 error retrieving secret, and the reason goes to the log", async () => {
      await put("moved-from", { value: "first" });
      await put("moved-to", { value: "second" });
      await put("key-lost", { value: "third" });
      const update = (key: string, value: string) =>
        api.services.db
          .updateTable("secrets")
          .set({ value })
          .where("account_id", "=", accountId)
          .where("key", "=", key)
          .execute();
      // A sealed value copied to another row does not open there (bound to account and key)...
      await update("moved-to", await rawValue("moved-from"));
      // ...nor one sealed by a key SECRETS_KEY no longer lists.
      await update("key-lost", (await rawValue("key-lost")).replace(/^v2\.[^.]+\./, "v2.retired."));

      for (const key of ["moved-to", "key-lost"]) {
        const response = await get(key);
        expect(response.status).toBe(500);
        expect(await readBody(response)).toEqual({ error: "error retrieving secret" });
      }
      expect(await readBody(await get("moved-from"))).toEqual({ key: "moved-from", value: "first" });
      const logs = api.logs();
      expect(logs).toContain("secret moved-to could not be opened");
      expect(logs).toContain(
        "secret key-lost could not be opened: sealed with key retired, which SECRETS_KEY does not list",
      );
      // Replacing the value makes the secret readable again.
      expect((await put("key-lost", { value: "renewed" })).status).toBe(200);
      expect(await readBody(await get("key-lost"))).toEqual({ key: "key-lost", value: "renewed" });
    });

    test("secrets.get/put/list/delete over tRPC behave as the REST operations", async () => {
      const { auth } = await signUp(api, "trpc-vault");
      const client = createTRPCClient<AppRouter>({
        links: [httpLink({ url: `${api.url}/trpc`, headers: bearer(auth.auth_token) })],
      });
      expect(await client.secrets.put.mutate({ key: "webhook-secret", value: "whsec_1" })).toEqual({
        message: "success",
      });
      expect(await client.secrets.get.query({ key: "webhook-secret" })).toEqual({
        key: "webhook-secret",
        value: "whsec_1",
      });
      const { data } = await client.secrets.list.query();
      expect(data.map((entry) => entry.key)).toEqual(["webhook-secret"]);
      expect(await client.secrets.delete.mutate({ key: "webhook-secret" })).toEqual({ message: "success" });
      const missing = await client.secrets.get.query({ key: "webhook-secret" }).catch((error: unknown) => error);
      expect(missing).toBeInstanceOf(TRPCClientError);
      expect((missing as TRPCClientError<AppRouter>).data).toMatchObject({ domainCode: "not_found", httpStatus: 404 });
      const invalid = await client.secrets.put.mutate({ key: "no.dots", value: "x" }).catch((error: unknown) => error);
      expect((invalid as TRPCClientError<AppRouter>).data).toMatchObject({
        domainCode: "validation_error",
        httpStatus: 400,
      });
    });

    test("no plaintext reaches the database row or the log, also when requests fail", async () => {
      const plaintext = "pt-7f3a9c1e-never-stored";
      expect((await put("canary", { value: plaintext })).status).toBe(200);
      expect(await readBody(await get("canary"))).toEqual({ key: "canary", value: plaintext });
      // Refused requests that carry the value: a bad key, an oversized value holding it.
      expect((await put("bad.key", { value: plaintext })).status).toBe(400);
      expect((await put("canary", { value: plaintext + "x".repeat(65_536) })).status).toBe(400);
      // A write the database fails (its table is away for a moment).
      const schema = api.services.db.schema;
      await schema.alterTable("secrets").renameTo("secrets_away").execute();
      let failed: Response;
      try {
        failed = await put("canary-2", { value: plaintext });
      } finally {
        await schema.alterTable("secrets_away").renameTo("secrets").execute();
      }
      expect(failed.status).toBe(500);
      expect(await readBody(failed)).toEqual({ error: "error retrieving secret" });

      const rows = await api.services.db.selectFrom("secrets").selectAll().where("key", "=", "canary").execute();
      expect(rows).toHaveLength(1);
      const stored = JSON.stringify(rows[0]);
      expect(stored).toContain('"value":"v2.');
      expect(stored).not.toContain(plaintext);
      expect(stored).not.toContain(Buffer.from(plaintext).toString("base64"));
      expect(stored).not.toContain(Buffer.from(plaintext).toString("hex"));

      const logs = api.logs();
      // The log did see these requests, the failure included...
      expect(logs).toContain('"path":"/secrets/canary"');
      expect(logs).toContain('"path":"/secrets/canary-2","status":500');
      expect(logs).toContain('"msg":"request failed"');
      // ...and never the value.
      expect(logs).not.toContain(plaintext);
    });
  });
}
