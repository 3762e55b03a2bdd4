import { expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { totpCodeFromUrl } from "@platform/core/testing";

import { SoftwareAuthenticator } from "./accounts-authenticator.ts";
import {
  type AuthResultBody,
  bearer,
  logIn,
  logInFully,
  PASSWORD,
  readBody,
  type SignedUp,
  signUp,
} from "./accounts-helpers.ts";
import { acceptInvitation, addMember, invite } from "./accounts-members.ts";
import { describeOnEachDatabase } from "./harness.ts";

/** The origin the "browser" runs on: PUBLIC_URL's, which the server accepts by default. */
const ORIGIN = "http://localhost:3000";
const STEP_MS = 30_000;

describeOnEachDatabase("accounts: TOTP and passkeys", {}, (suite) => {
  const post = (path: string, json: unknown, token?: string) =>
    suite.api.request(path, { method: "POST", json, headers: token ? bearer(token) : {} });

  async function mfaTokenFor(email: string, methods: string[]): Promise<string> {
    const response = await logIn(suite.api, email);
    expect(response.status).toBe(200);
    const { data } = await readBody(response);
    expect(Object.keys(data).sort()).toEqual(["methods", "mfa_required", "mfa_token"]);
    expect(data.mfa_required).toBe(true);
    expect(data.methods).toEqual(methods);
    return data.mfa_token;
  }

  /** Sets up TOTP for a fresh owner and returns its URL and the time of the confirming code. */
  async function ownerWithTotp(tag: string): Promise<SignedUp & { otpauthUrl: string; confirmedAt: number }> {
    const owner = await signUp(suite.api, tag);
    const setup = await post("/accounts/totp/setup", undefined, owner.auth.auth_token);
    const { data } = await readBody(setup);
    const confirmedAt = Date.now();
    const verify = await post(
      "/accounts/totp/verify",
      { code: totpCodeFromUrl(data.otpauth_url, confirmedAt) },
      owner.auth.auth_token,
    );
    expect(verify.status).toBe(200);
    return { ...owner, otpauthUrl: data.otpauth_url, confirmedAt };
  }

  async function registerPasskey(token: string): Promise<SoftwareAuthenticator> {
    const authenticator = new SoftwareAuthenticator(ORIGIN);
    const options = await readBody(await post("/accounts/passkeys/register-options", undefined, token));
    const response = await post("/accounts/passkeys/register", { response: authenticator.register(options) }, token);
    expect(response.status).toBe(200);
    expect(await readBody(response)).toEqual({ message: "success" });
    return authenticator;
  }

  test("TOTP setup gives a secret and its otpauth URL; sign-in needs no code until one is confirmed", async () => {
    const owner = await signUp(suite.api, "totp-setup");
    const setup = await post("/accounts/totp/setup", undefined, owner.auth.auth_token);
    expect(setup.status).toBe(200);
    const { data } = await readBody(setup);
    expect(Object.keys(data).sort()).toEqual(["otpauth_url", "secret"]);
    expect(data.otpauth_url).toStartWith("otpauth://totp/");
    expect(new URL(data.otpauth_url).searchParams.get("secret")).toBe(data.secret);
    // What the database keeps is sealed: a copy of it does not give the secret away.
    const stored = await suite.api.services.db.selectFrom("user_totp").select("secret").execute();
    expect(stored.length).toBeGreaterThan(0);
    for (const row of stored) expect(row.secret).not.toContain(data.secret);

    const before = await logInFully(suite.api, owner.email);
    expect(before.totp_enabled).toBe(false);

    const wrong = await post("/accounts/totp/verify", { code: "000000" }, owner.auth.auth_token);
    expect(wrong.status).toBe(400);
    expect(await readBody(wrong)).toEqual({ error: "invalid code" });
    const malformed = await post("/accounts/totp/verify", { code: "12ab" }, owner.auth.auth_token);
    expect(malformed.status).toBe(400);

    const verify = await post(
      "/accounts/totp/verify",
      { code: totpCodeFromUrl(data.otpauth_url) },
      owner.auth.auth_token,
    );
    expect(verify.status).toBe(200);
    expect(await readBody(verify)).toEqual({ message: "success" });

    const again = await post("/accounts/totp/setup", undefined, owner.auth.auth_token);
    expect(again.status).toBe(409);
    expect(await readBody(again)).toEqual({ error: "TOTP is already enabled" });
  });

  test("with TOTP enabled, sign-in asks for a code, and a code from the app completes it", async () => {
    const owner = await ownerWithTotp("totp-login");
    const mfaToken = await mfaTokenFor(owner.email, ["totp"]);
    // The confirming code's step is spent; the app's next code is the one to use.
    const code = totpCodeFromUrl(owner.otpauthUrl, owner.confirmedAt + STEP_MS);
    const response = await post("/accounts/auth-with-mfa", { mfa_token: mfaToken, totp_code: code });
    expect(response.status).toBe(200);
    const { data } = (await readBody(response)) as { data: AuthResultBody };
    expect(data.totp_enabled).toBe(true);
    expect(data.passkey_enabled).toBe(false);
    expect(data.account).toEqual(owner.auth.account);
    expect((await suite.api.request("/accounts/users", { headers: bearer(data.auth_token) })).status).toBe(200);

    // The MFA token was spent.
    const spent = await post("/accounts/auth-with-mfa", { mfa_token: mfaToken, totp_code: code });
    expect(spent.status).toBe(401);
    expect(await readBody(spent)).toEqual({ error: "invalid or expired mfa_token" });
  });

  test("a TOTP code is accepted once; a replayed, older or wrong code is refused", async () => {
    const owner = await ownerWithTotp("totp-replay");
    const code = totpCodeFromUrl(owner.otpauthUrl, owner.confirmedAt + STEP_MS);
    const first = await post("/accounts/auth-with-mfa", {
      mfa_token: await mfaTokenFor(owner.email, ["totp"]),
      totp_code: code,
    });
    expect(first.status).toBe(200);

    const mfaToken = await mfaTokenFor(owner.email, ["totp"]);
    for (const refused of [code, totpCodeFromUrl(owner.otpauthUrl, owner.confirmedAt), "123456"]) {
      const response = await post("/accounts/auth-with-mfa", { mfa_token: mfaToken, totp_code: refused });
      expect(response.status).toBe(401);
      expect(await readBody(response)).toEqual({ error: "invalid or already used code" });
    }
  });

  test("malformed second-factor requests are 400 and unknown MFA tokens 401", async () => {
    const neither = await post("/accounts/auth-with-mfa", { mfa_token: "mfa_x" });
    expect(neither.status).toBe(400);
    const notDigits = await post("/accounts/auth-with-mfa", { mfa_token: "mfa_x", totp_code: "abcdef" });
    expect(notDigits.status).toBe(400);
    const unknown = await post("/accounts/auth-with-mfa", { mfa_token: "mfa_x", totp_code: "123456" });
    expect(unknown.status).toBe(401);
    expect(await readBody(unknown)).toEqual({ error: "invalid or expired mfa_token" });
  });

  test("a passkey registers with the software authenticator and then completes sign-ins", async () => {
    const owner = await signUp(suite.api, "passkey");
    const options = await readBody(await post("/accounts/passkeys/register-options", undefined, owner.auth.auth_token));
    expect(options.rp).toEqual({ name: "Workflow Platform", id: "localhost" });
    expect(options.user.name).toBe(owner.email);
    expect(options.challenge).toBeString();
    const authenticator = new SoftwareAuthenticator(ORIGIN);
    const registered = await post(
      "/accounts/passkeys/register",
      { response: authenticator.register(options) },
      owner.auth.auth_token,
    );
    expect(registered.status).toBe(200);

    const mfaToken = await mfaTokenFor(owner.email, ["passkey"]);
    const requestOptions = await readBody(await post("/accounts/passkeys/auth-options", { mfa_token: mfaToken }));
    expect(requestOptions.rpId).toBe("localhost");
    expect(requestOptions.allowCredentials.map((credential: { id: string }) => credential.id)).toEqual([
      authenticator.id,
    ]);

    const response = await post("/accounts/auth-with-mfa", {
      mfa_token: mfaToken,
      passkey: authenticator.assert(requestOptions),
    });
    expect(response.status).toBe(200);
    const { data } = (await readBody(response)) as { data: AuthResultBody };
    expect(data.passkey_enabled).toBe(true);
    expect(data.totp_enabled).toBe(false);
    expect((await suite.api.request("/accounts/users", { headers: bearer(data.auth_token) })).status).toBe(200);

    // The same authenticator again, on a new sign-in.
    const second = await mfaTokenFor(owner.email, ["passkey"]);
    const secondOptions = await readBody(await post("/accounts/passkeys/auth-options", { mfa_token: second }));
    const again = await post("/accounts/auth-with-mfa", {
      mfa_token: second,
      passkey: authenticator.assert(secondOptions),
    });
    expect(again.status).toBe(200);
  });

  test("assertions over the wrong challenge, for another site, or by an unknown authenticator are refused", async () => {
    const owner = await signUp(suite.api, "passkey-bad");
    const authenticator = await registerPasskey(owner.auth.auth_token);
    const mfaToken = await mfaTokenFor(owner.email, ["passkey"]);

    const early = await post("/accounts/auth-with-mfa", {
      mfa_token: mfaToken,
      passkey: authenticator.assert({ challenge: "AAAA" }),
    });
    expect(early.status).toBe(400);

    const options = await readBody(await post("/accounts/passkeys/auth-options", { mfa_token: mfaToken }));
    const attempts = [
      authenticator.assert(options, { challenge: Buffer.from("another challenge").toString("base64url") }),
      authenticator.assert(options, { rpId: "evil.example" }),
      new SoftwareAuthenticator(ORIGIN).assert(options),
      new SoftwareAuthenticator("https://evil.example").assert(options),
    ];
    for (const passkey of attempts) {
      const response = await post("/accounts/auth-with-mfa", { mfa_token: mfaToken, passkey });
      expect(response.status).toBe(401);
      expect(await readBody(response)).toEqual({ error: "passkey not accepted" });
    }
    // The honest assertion still works: failures did not spend the sign-in.
    const honest = await post("/accounts/auth-with-mfa", {
      mfa_token: mfaToken,
      passkey: authenticator.assert(options),
    });
    expect(honest.status).toBe(200);
  });

  test("registering without options, or the same passkey twice, is refused", async () => {
    const owner = await signUp(suite.api, "passkey-twice");
    const authenticator = new SoftwareAuthenticator(ORIGIN);
    const withoutOptions = await post(
      "/accounts/passkeys/register",
      { response: authenticator.register({ challenge: "AAAA", rp: { id: "localhost" } }) },
      owner.auth.auth_token,
    );
    expect(withoutOptions.status).toBe(400);

    const options = await readBody(await post("/accounts/passkeys/register-options", undefined, owner.auth.auth_token));
    expect(
      (await post("/accounts/passkeys/register", { response: authenticator.register(options) }, owner.auth.auth_token))
        .status,
    ).toBe(200);
    const next = await readBody(await post("/accounts/passkeys/register-options", undefined, owner.auth.auth_token));
    expect(next.excludeCredentials.map((credential: { id: string }) => credential.id)).toEqual([authenticator.id]);
    const twice = await post(
      "/accounts/passkeys/register",
      { response: authenticator.register(next) },
      owner.auth.auth_token,
    );
    expect(twice.status).toBe(409);
  });

  test("a credential id over WebAuthn's 1023 bytes, or a pile of transports, is refused with 400", async () => {
    const owner = await signUp(suite.api, "passkey-huge");
    const attempt = async (authenticator: SoftwareAuthenticator, transports?: string[]) => {
      const options = await readBody(
        await post("/accounts/passkeys/register-options", undefined, owner.auth.auth_token),
      );
      const response = authenticator.register(options);
      if (transports) response.response.transports = transports;
      return post("/accounts/passkeys/register", { response }, owner.auth.auth_token);
    };
    for (const bytes of [1024, 5000]) {
      const response = await attempt(new SoftwareAuthenticator(ORIGIN, randomBytes(bytes)));
      expect(response.status).toBe(400);
      expect(await readBody(response)).toEqual({
        error: "passkey registration failed: the credential id is longer than 1023 bytes",
      });
    }
    const piled = await attempt(
      new SoftwareAuthenticator(ORIGIN),
      Array.from({ length: 5000 }, () => "x".repeat(100)),
    );
    expect(piled.status).toBe(400);
    expect(Object.keys(await readBody(piled))).toEqual(["error", "problems"]);

    // The longest id WebAuthn allows registers and signs in.
    const longest = new SoftwareAuthenticator(ORIGIN, randomBytes(1023));
    expect((await attempt(longest, ["usb", "nfc"])).status).toBe(200);
    const mfaToken = await mfaTokenFor(owner.email, ["passkey"]);
    const options = await readBody(await post("/accounts/passkeys/auth-options", { mfa_token: mfaToken }));
    expect(options.allowCredentials).toEqual([{ id: longest.id, type: "public-key", transports: ["usb", "nfc"] }]);
    const signIn = await post("/accounts/auth-with-mfa", { mfa_token: mfaToken, passkey: longest.assert(options) });
    expect(signIn.status).toBe(200);
  });

  test("with TOTP and a passkey, sign-in offers both and either completes it", async () => {
    const owner = await ownerWithTotp("both");
    const authenticator = await registerPasskey(owner.auth.auth_token);
    const byPasskey = await mfaTokenFor(owner.email, ["totp", "passkey"]);
    const options = await readBody(await post("/accounts/passkeys/auth-options", { mfa_token: byPasskey }));
    const response = await post("/accounts/auth-with-mfa", {
      mfa_token: byPasskey,
      passkey: authenticator.assert(options),
    });
    const { data } = (await readBody(response)) as { data: AuthResultBody };
    expect(data.totp_enabled).toBe(true);
    expect(data.passkey_enabled).toBe(true);

    const byCode = await mfaTokenFor(owner.email, ["totp", "passkey"]);
    const code = totpCodeFromUrl(owner.otpauthUrl, owner.confirmedAt + STEP_MS);
    expect((await post("/accounts/auth-with-mfa", { mfa_token: byCode, totp_code: code })).status).toBe(200);
  });

  test("a user removes their own passkeys; passkey_enabled and sign-in follow", async () => {
    const owner = await signUp(suite.api, "passkey-remove");
    await registerPasskey(owner.auth.auth_token);
    await mfaTokenFor(owner.email, ["passkey"]);

    const response = await suite.api.request("/accounts/all-passkeys", {
      method: "DELETE",
      headers: bearer(owner.auth.auth_token),
      json: { email: owner.email },
    });
    expect(response.status).toBe(200);
    expect(await readBody(response)).toEqual({ message: "success" });
    const after = await logInFully(suite.api, owner.email);
    expect(after.passkey_enabled).toBe(false);
  });

  test("owners and admins remove another user's passkeys; members cannot, and nobody but the owner touches the owner's", async () => {
    const owner = await signUp(suite.api, "pk-owner");
    const admin = await addMember(suite.api, owner.auth.auth_token, "pk-admin", "admin");
    const member = await addMember(suite.api, owner.auth.auth_token, "pk-member", "member");
    await registerPasskey(member.auth.auth_token);
    await registerPasskey(owner.auth.auth_token);
    const removeAll = (token: string, email: string) =>
      suite.api.request(`/accounts/all-passkeys?email=${encodeURIComponent(email)}`, {
        method: "DELETE",
        headers: bearer(token),
      });

    const byMember = await removeAll(member.auth.auth_token, owner.email);
    expect(byMember.status).toBe(403);
    expect(await readBody(byMember)).toEqual({
      error: "only owners and admins can remove another user's passkeys",
    });
    const byAdminOnOwner = await removeAll(admin.auth.auth_token, owner.email);
    expect(byAdminOnOwner.status).toBe(403);

    expect((await removeAll(admin.auth.auth_token, member.email)).status).toBe(200);
    expect((await logInFully(suite.api, member.email)).passkey_enabled).toBe(false);
    await mfaTokenFor(owner.email, ["passkey"]);

    const unknown = await removeAll(owner.auth.auth_token, "nobody@example.com");
    expect(unknown.status).toBe(404);
  });

  test("an admin cannot remove the passkeys of a user who also belongs to another account", async () => {
    const owner = await signUp(suite.api, "pk-home-owner");
    const outsider = await signUp(suite.api, "pk-other-owner");
    const token = await invite(suite.api, owner.auth.auth_token, outsider.email, "member");
    expect((await acceptInvitation(suite.api, { token, password: PASSWORD })).status).toBe(200);
    await registerPasskey(outsider.auth.auth_token);

    const response = await suite.api.request(`/accounts/all-passkeys?email=${encodeURIComponent(outsider.email)}`, {
      method: "DELETE",
      headers: bearer(owner.auth.auth_token),
    });
    expect(response.status).toBe(403);
    expect(await readBody(response)).toEqual({
      error: "this user also belongs to another account; only they can remove their passkeys",
    });
    await mfaTokenFor(outsider.email, ["passkey"]);
  });

  test("second factors are enrolled with a Bearer token, not with an API key", async () => {
    const owner = await signUp(suite.api, "pk-apikey");
    const created = await post("/accounts/api-keys", { name: "ci" }, owner.auth.auth_token);
    const { data } = await readBody(created);
    for (const path of ["/accounts/totp/setup", "/accounts/passkeys/register-options"]) {
      const response = await suite.api.request(path, { method: "POST", headers: { "x-api-key": data.key } });
      expect(response.status).toBe(403);
      expect((await readBody(response)).error).toContain("not an API key");
    }
  });
});
