import { expect, test } from "bun:test";

import { bearer, logIn, logInFully, PASSWORD, readBody, signUp, uniqueEmail } from "./accounts-helpers.ts";
import { handSignedJwt, jwtParts, testSigningKey } from "./accounts-tokens.ts";
import { describeOnEachDatabase } from "./harness.ts";

const AUTH_RESULT_FIELDS = ["account", "auth_token", "passkey_enabled", "refresh_token", "totp_enabled"];
const ACCOUNT_FIELDS = ["display_name", "id", "name", "root_email", "subscription_status"];
const PRICE_FIELDS = ["amount", "currency", "id", "lookup_key", "metadata", "nickname", "unit_amount"];

/** Tokens the tests mint are signed with the servers' own key. */
const key = testSigningKey();

// No grace for a second presentation of a refresh token: reuse is refused at once.
describeOnEachDatabase(
  "accounts: sign-up, sign-in, tokens",
  { env: { JWT_SIGNING_KEYS: key.env, REFRESH_REUSE_GRACE_S: "0" } },
  (suite) => {
    const usersWith = (headers: Record<string, string>) => suite.api.request("/accounts/users", { headers });

    test("sign-up answers the spec's Authentication result for the new owner, on the free plan", async () => {
      const email = uniqueEmail("Founder").replace("founder", "FOUNDER");
      const response = await suite.api.request("/accounts/signup", {
        method: "POST",
        json: { email: `  ${email} `, password: PASSWORD, account_name: "Acme", display_name: "Ada" },
      });
      expect(response.status).toBe(200);
      const { data } = await readBody(response);
      expect(Object.keys(data).sort()).toEqual(AUTH_RESULT_FIELDS);
      expect(Object.keys(data.account).sort()).toEqual(ACCOUNT_FIELDS);
      expect(data.account).toMatchObject({
        name: "Acme",
        display_name: "Ada",
        root_email: email.toLowerCase(),
        subscription_status: "free",
      });
      expect(data.account.id).toBeString();
      expect(data.passkey_enabled).toBe(false);
      expect(data.totp_enabled).toBe(false);

      const { header, payload } = jwtParts(data.auth_token);
      expect(header).toMatchObject({ alg: "HS256", kid: key.kid });
      expect(payload).toMatchObject({ acc: data.account.id, sub: expect.any(String) });
      expect(Number(payload.exp) - Number(payload.iat)).toBe(900);

      const users = await usersWith(bearer(data.auth_token));
      expect(await readBody(users)).toEqual({
        data: [{ email: email.toLowerCase(), role: "owner", display_name: "Ada", status: "active" }],
      });
    });

    test("an email that already has a user cannot sign up again, whatever its case", async () => {
      const { email } = await signUp(suite.api, "taken");
      const again = await suite.api.request("/accounts/signup", {
        method: "POST",
        json: { email: email.toUpperCase(), password: PASSWORD, account_name: "Second" },
      });
      expect(again.status).toBe(409);
      expect(await readBody(again)).toEqual({ error: "an account with this email already exists" });
    });

    test("malformed sign-ups are 400 with an error naming the field", async () => {
      const cases: [unknown, string][] = [
        [{ email: uniqueEmail("short"), password: "nine char", account_name: "x" }, "password"],
        [{ email: "not-an-email", password: PASSWORD, account_name: "x" }, "email"],
        [{ email: uniqueEmail("noname"), password: PASSWORD }, "account_name"],
      ];
      for (const [json, field] of cases) {
        const response = await suite.api.request("/accounts/signup", { method: "POST", json });
        expect(response.status).toBe(400);
        const body = await readBody(response);
        expect(Object.keys(body)).toEqual(["error", "problems"]);
        expect(body.error).toContain(field);
        expect(body.problems.map((problem: { path: string }) => problem.path)).toEqual([field]);
      }
      const badJson = await suite.api.request("/accounts/signup", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "{email",
      });
      expect(badJson.status).toBe(400);
      expect(Object.keys(await readBody(badJson))).toEqual(["error"]);
    });

    test("password sign-in answers the Authentication result; the email's case does not matter", async () => {
      const { email, auth } = await signUp(suite.api, "login");
      const response = await logIn(suite.api, email.toUpperCase());
      expect(response.status).toBe(200);
      const { data } = await readBody(response);
      expect(Object.keys(data).sort()).toEqual(AUTH_RESULT_FIELDS);
      expect(data.account).toEqual(auth.account);
      expect(data.refresh_token).not.toBe(auth.refresh_token);
      expect((await usersWith(bearer(data.auth_token))).status).toBe(200);
    });

    test("a wrong password and an unknown email get the same 401", async () => {
      const { email } = await signUp(suite.api, "wrongpw");
      const wrong = await logIn(suite.api, email, "not the password at all");
      const unknown = await logIn(suite.api, uniqueEmail("nobody"), "not the password at all");
      expect(wrong.status).toBe(401);
      expect(unknown.status).toBe(401);
      const bodies = [await readBody(wrong), await readBody(unknown)];
      expect(bodies[0]).toEqual({ error: "invalid email or password" });
      expect(bodies[1]).toEqual(bodies[0]);
    });

    test("malformed sign-in bodies are 400", async () => {
      for (const json of [
        {},
        { email: "a@example.com" },
        { email: "", password: "x" },
        { email: ["a"], password: "x" },
      ]) {
        const response = await suite.api.request("/accounts/auth-with-password", { method: "POST", json });
        expect(response.status).toBe(400);
        expect(Object.keys(await readBody(response))).toEqual(["error", "problems"]);
      }
    });

    test("over-long emails, passwords and tokens are 400 naming the field, not a 500 or an internal message", async () => {
      const { auth } = await signUp(suite.api, "long");
      // Characters of three UTF-8 bytes each, which no index row of the limiter can hold.
      const wide = Array.from({ length: 1000 }, (_, i) => String.fromCharCode(0x4e00 + ((i * 7919) % 20000))).join("");
      const longEmail = `${"a".repeat(250)}@example.com`;
      const cases: [string, string, unknown, string][] = [
        ["POST", "/accounts/auth-with-password", { email: wide, password: "x" }, "email"],
        ["POST", "/accounts/auth-with-password", { email: `${"a".repeat(2000)}@example.com`, password: "x" }, "email"],
        ["POST", "/accounts/auth-with-password", { email: "a@example.com", password: "x".repeat(1025) }, "password"],
        ["POST", "/accounts/signup", { email: longEmail, password: PASSWORD, account_name: "x" }, "email"],
        ["POST", "/accounts/users", { email: longEmail, role: "member" }, "email"],
        ["DELETE", "/accounts/remove-user", { email: wide }, "email"],
        ["DELETE", "/accounts/all-passkeys", { email: wide }, "email"],
        ["POST", "/accounts/refresh", { refresh_token: `rt_${"x".repeat(10_000)}` }, "refresh_token"],
        [
          "POST",
          "/accounts/auth-with-mfa",
          { mfa_token: `mfa_${"x".repeat(10_000)}`, totp_code: "123456" },
          "mfa_token",
        ],
      ];
      for (const [method, path, json, field] of cases) {
        const response = await suite.api.request(path, { method, json, headers: bearer(auth.auth_token) });
        expect(response.status, `${path} ${field}`).toBe(400);
        const body = await readBody(response);
        expect(Object.keys(body)).toEqual(["error", "problems"]);
        expect(body.error).toContain(`${field}: must be at most`);
        expect(body.problems).toEqual([{ path: field, message: expect.stringMatching(/^must be at most/) }]);
      }
    });

    test("missing, expired, forged and unsigned access tokens are 401", async () => {
      const { auth } = await signUp(suite.api, "tokens");
      const { payload } = jwtParts(auth.auth_token);
      const now = Math.floor(Date.now() / 1000);
      const secret = Buffer.from(key.secret, "base64url");
      const header = { alg: "HS256", kid: key.kid, typ: "JWT" };

      const missing = await usersWith({});
      expect(missing.status).toBe(401);
      expect(await readBody(missing)).toEqual({ error: "missing credential" });

      const expired = handSignedJwt(secret, header, { ...payload, iat: now - 3600, exp: now - 60 });
      const expiredResponse = await usersWith(bearer(expired));
      expect(expiredResponse.status).toBe(401);
      expect(await readBody(expiredResponse)).toEqual({ error: "access token expired" });

      // The server's own key, honestly used, is accepted: the refusals below are about the forgery.
      const genuine = handSignedJwt(secret, header, { ...payload, iat: now, exp: now + 60 });
      expect((await usersWith(bearer(genuine))).status).toBe(200);

      const forgeries = [
        handSignedJwt(Buffer.alloc(32, 7), header, { ...payload, exp: now + 60 }),
        handSignedJwt(secret, header, { ...payload, sub: "someone-else", exp: now + 60 }),
        handSignedJwt(secret, { ...header, alg: "HS512" }, { ...payload, exp: now + 60 }),
        `${Buffer.from(JSON.stringify({ alg: "none" })).toString("base64url")}.${Buffer.from(JSON.stringify({ ...payload, exp: now + 60 })).toString("base64url")}.`,
        `${auth.auth_token.slice(0, -4)}AAAA`,
        "garbage",
      ];
      for (const token of forgeries) {
        const response = await usersWith(bearer(token));
        expect(response.status).toBe(401);
        expect(await readBody(response)).toEqual({ error: "invalid credential" });
      }
    });

    test("refresh rotates: the new tokens work and the spent refresh token is refused", async () => {
      const { auth } = await signUp(suite.api, "refresh");
      const first = await suite.api.request("/accounts/refresh", {
        method: "POST",
        json: { refresh_token: auth.refresh_token },
      });
      expect(first.status).toBe(200);
      const { data } = await readBody(first);
      expect(Object.keys(data).sort()).toEqual(AUTH_RESULT_FIELDS);
      expect(data.account).toEqual(auth.account);
      expect(data.refresh_token).not.toBe(auth.refresh_token);
      expect((await usersWith(bearer(data.auth_token))).status).toBe(200);

      const reused = await suite.api.request("/accounts/refresh", {
        method: "POST",
        json: { refresh_token: auth.refresh_token },
      });
      expect(reused.status).toBe(401);
      expect(await readBody(reused)).toEqual({ error: "refresh token was already used; sign in again" });
    });

    test("reusing a rotated refresh token revokes its whole family, access tokens included", async () => {
      const { email, auth } = await signUp(suite.api, "family");
      const other = await logInFully(suite.api, email);
      const rotated = await readBody(
        await suite.api.request("/accounts/refresh", { method: "POST", json: { refresh_token: auth.refresh_token } }),
      );
      const latest = rotated.data as { auth_token: string; refresh_token: string };

      // The stolen, already-rotated token comes back.
      expect(
        (await suite.api.request("/accounts/refresh", { method: "POST", json: { refresh_token: auth.refresh_token } }))
          .status,
      ).toBe(401);

      const successor = await suite.api.request("/accounts/refresh", {
        method: "POST",
        json: { refresh_token: latest.refresh_token },
      });
      expect(successor.status).toBe(401);
      expect((await usersWith(bearer(latest.auth_token))).status).toBe(401);
      expect((await usersWith(bearer(auth.auth_token))).status).toBe(401);
      // Another sign-in of the same user is a different family and keeps working.
      expect((await usersWith(bearer(other.auth_token))).status).toBe(200);
    });

    test("an unknown or malformed refresh token is refused", async () => {
      const unknown = await suite.api.request("/accounts/refresh", {
        method: "POST",
        json: { refresh_token: "rt_nope" },
      });
      expect(unknown.status).toBe(401);
      expect(await readBody(unknown)).toEqual({ error: "invalid refresh token" });
      const empty = await suite.api.request("/accounts/refresh", { method: "POST", json: {} });
      expect(empty.status).toBe(400);
    });

    test("logout ends the session: its refresh token and access token stop working", async () => {
      const { auth } = await signUp(suite.api, "logout");
      const response = await suite.api.request("/accounts/logout", {
        method: "POST",
        headers: bearer(auth.auth_token),
        json: { refresh_token: auth.refresh_token },
      });
      expect(response.status).toBe(200);
      expect(await readBody(response)).toEqual({ message: "success" });
      expect((await usersWith(bearer(auth.auth_token))).status).toBe(401);
      const refresh = await suite.api.request("/accounts/refresh", {
        method: "POST",
        json: { refresh_token: auth.refresh_token },
      });
      expect(refresh.status).toBe(401);

      const anonymous = await suite.api.request("/accounts/logout", { method: "POST", json: { refresh_token: "x" } });
      expect(anonymous.status).toBe(401);
    });

    test("logout cannot end somebody else's session", async () => {
      const victim = await signUp(suite.api, "victim");
      const attacker = await signUp(suite.api, "attacker");
      const response = await suite.api.request("/accounts/logout", {
        method: "POST",
        headers: bearer(attacker.auth.auth_token),
        json: { refresh_token: victim.auth.refresh_token },
      });
      expect(response.status).toBe(200);
      expect((await usersWith(bearer(victim.auth.auth_token))).status).toBe(200);
    });

    test("prices list the default catalog with exactly the spec's Price fields", async () => {
      const { auth } = await signUp(suite.api, "prices");
      const response = await suite.api.request("/accounts/payment/prices", { headers: bearer(auth.auth_token) });
      expect(response.status).toBe(200);
      const { data } = await readBody(response);
      expect(data.map((price: { lookup_key: string }) => price.lookup_key)).toEqual([
        "free",
        "pro_monthly",
        "pro_yearly",
        "team_monthly",
      ]);
      for (const price of data) {
        expect(Object.keys(price).sort()).toEqual(PRICE_FIELDS);
        expect(Number.isInteger(price.unit_amount)).toBe(true);
        expect(Number.isInteger(price.amount)).toBe(true);
      }
      const anonymous = await suite.api.request("/accounts/payment/prices");
      expect(anonymous.status).toBe(401);
      expect(await readBody(anonymous)).toEqual({ error: "missing credential" });
    });

    test("tRPC clients reach the same sign-in", async () => {
      const { email } = await signUp(suite.api, "trpc");
      const response = await suite.api.request("/trpc/accounts.authWithPassword", {
        method: "POST",
        json: { email, password: PASSWORD },
      });
      expect(response.status).toBe(200);
      const body = await readBody(response);
      expect(body.result.data.data.account.root_email).toBe(email);
    });

    test("the OpenAPI document describes every account operation and its shapes", async () => {
      const document = await readBody(await suite.api.request("/openapi.json"));
      const operations: [string, string, boolean][] = [
        ["post", "/accounts/signup", false],
        ["post", "/accounts/auth-with-password", false],
        ["post", "/accounts/auth-with-mfa", false],
        ["post", "/accounts/passkeys/auth-options", false],
        ["post", "/accounts/refresh", false],
        ["post", "/accounts/logout", true],
        ["post", "/accounts/totp/setup", true],
        ["post", "/accounts/totp/verify", true],
        ["post", "/accounts/passkeys/register-options", true],
        ["post", "/accounts/passkeys/register", true],
        ["delete", "/accounts/all-passkeys", true],
        ["post", "/accounts/users", true],
        ["get", "/accounts/users", true],
        ["delete", "/accounts/remove-user", true],
        ["post", "/accounts/api-keys", true],
        ["get", "/accounts/api-keys", true],
        ["delete", "/accounts/api-keys/{id}", true],
        ["get", "/accounts/payment/prices", true],
      ];
      for (const [method, path, secured] of operations) {
        const operation = document.paths[path]?.[method];
        expect(operation, `${method} ${path}`).toBeDefined();
        if (secured) expect(operation.security).toEqual([{ bearerAuth: [] }, { apiKey: [] }]);
        else expect(operation.security).toEqual([]);
      }
      const schemas = document.components.schemas;
      expect(Object.keys(schemas.AuthResult.properties).sort()).toEqual(AUTH_RESULT_FIELDS);
      expect(Object.keys(schemas.Account.properties).sort()).toEqual(ACCOUNT_FIELDS);
      expect(Object.keys(schemas.Price.properties).sort()).toEqual(PRICE_FIELDS);
      expect(Object.keys(schemas.MfaRequired.properties).sort()).toEqual(["methods", "mfa_required", "mfa_token"]);
      const login = document.paths["/accounts/auth-with-password"].post;
      expect(login.description).toContain("the account they own, else the one they joined first");
      expect(login.responses["401"].content["application/json"].schema).toEqual({
        $ref: "#/components/schemas/Error",
      });
    });
  },
);
