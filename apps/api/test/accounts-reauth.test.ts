import { expect, test } from "bun:test";
import { totpCodeFromUrl } from "@platform/core/testing";

import { SoftwareAuthenticator } from "./accounts-authenticator.ts";
import { bearer, logIn, logInFully, PASSWORD, readBody, signUp } from "./accounts-helpers.ts";
import { addMember } from "./accounts-members.ts";
import { jwtParts } from "./accounts-tokens.ts";
import { enableTotp, TOTP_STEP_MS } from "./accounts-totp.ts";
import { describeOnEachDatabase } from "./harness.ts";

const ORIGIN = "http://localhost:3000";
const NEEDS_RECENT = {
  error:
    "this needs a sign-in from the last 10 minutes: confirm your password or a code with POST /accounts/reauthenticate",
};

describeOnEachDatabase("accounts: re-authentication", {}, (suite) => {
  const call = (method: string, path: string, token: string, json?: unknown) =>
    suite.api.request(path, { method, headers: bearer(token), json });
  const reauthenticate = (token: string, json: unknown) => call("POST", "/accounts/reauthenticate", token, json);

  /** The session of `authToken` signed in eleven minutes ago: its tokens still work, but are not recent. */
  async function ageSession(authToken: string): Promise<void> {
    const sessionId = String(jwtParts(authToken).payload.sid);
    await suite.api.services.db
      .updateTable("auth_sessions")
      .set({ authenticated_at: new Date(Date.now() - 11 * 60_000) })
      .where("id", "=", sessionId)
      .execute();
  }

  async function registerPasskey(token: string): Promise<void> {
    const authenticator = new SoftwareAuthenticator(ORIGIN);
    const options = await readBody(await call("POST", "/accounts/passkeys/register-options", token));
    const response = await call("POST", "/accounts/passkeys/register", token, {
      response: authenticator.register(options),
    });
    expect(response.status).toBe(200);
  }

  test("an old sign-in may not change second factors until the password is confirmed again", async () => {
    const user = await signUp(suite.api, "sudo-password");
    const token = user.auth.auth_token;
    await ageSession(token);
    expect((await call("GET", "/accounts/users", token)).status).toBe(200);
    for (const [method, path, json] of [
      ["POST", "/accounts/totp/setup", undefined],
      ["POST", "/accounts/totp/verify", { code: "123456" }],
      ["POST", "/accounts/passkeys/register-options", undefined],
      ["DELETE", "/accounts/all-passkeys", { email: user.email }],
      ["DELETE", "/accounts/totp", undefined],
    ] as const) {
      const refused = await call(method, path, token, json);
      expect(refused.status).toBe(403);
      expect(await readBody(refused)).toEqual(NEEDS_RECENT);
    }

    const wrong = await reauthenticate(token, { password: "not my password" });
    expect(wrong.status).toBe(401);
    expect(await readBody(wrong)).toEqual({ error: "wrong password" });
    const both = await reauthenticate(token, { password: PASSWORD, totp_code: "123456" });
    expect(both.status).toBe(400);

    const confirmed = await reauthenticate(token, { password: PASSWORD });
    expect(confirmed.status).toBe(200);
    const { data } = await readBody(confirmed);
    expect(Math.abs(data.auth_time - Date.now() / 1000)).toBeLessThan(120);
    expect(jwtParts(data.auth_token).payload.auth_time).toBe(data.auth_time);
    expect(jwtParts(data.auth_token).payload.sid).toBe(jwtParts(token).payload.sid);
    // The session is recent again: the token in hand works for the change as well as the new one.
    expect((await call("POST", "/accounts/totp/setup", token)).status).toBe(200);
    expect((await call("POST", "/accounts/passkeys/register-options", data.auth_token)).status).toBe(200);
  });

  test("TOTP is turned off with DELETE /accounts/totp after confirming a code", async () => {
    const user = await signUp(suite.api, "sudo-totp");
    const totp = await enableTotp(suite.api, user.auth.auth_token);
    await ageSession(user.auth.auth_token);
    expect((await call("DELETE", "/accounts/totp", user.auth.auth_token)).status).toBe(403);

    const confirmed = await reauthenticate(user.auth.auth_token, {
      totp_code: totpCodeFromUrl(totp.otpauthUrl, totp.confirmedAt + TOTP_STEP_MS),
    });
    expect(confirmed.status).toBe(200);
    const disabled = await call("DELETE", "/accounts/totp", user.auth.auth_token);
    expect(disabled.status).toBe(200);
    expect(await readBody(disabled)).toEqual({ message: "success" });
    expect((await logInFully(suite.api, user.email)).totp_enabled).toBe(false);

    const again = await call("DELETE", "/accounts/totp", user.auth.auth_token);
    expect(again.status).toBe(404);
    expect(await readBody(again)).toEqual({ error: "TOTP is not enabled" });
  });

  test("a stolen access token alone no longer removes the passkeys; an admin still removes another user's", async () => {
    const owner = await signUp(suite.api, "sudo-owner");
    await registerPasskey(owner.auth.auth_token);
    await ageSession(owner.auth.auth_token);
    const removeOwn = await call(
      "DELETE",
      `/accounts/all-passkeys?email=${encodeURIComponent(owner.email)}`,
      owner.auth.auth_token,
    );
    expect(removeOwn.status).toBe(403);
    expect(await readBody(removeOwn)).toEqual(NEEDS_RECENT);
    expect((await readBody(await logIn(suite.api, owner.email))).data.methods).toEqual(["passkey"]);

    const member = await addMember(suite.api, owner.auth.auth_token, "sudo-member", "member");
    await registerPasskey(member.auth.auth_token);
    const byAdmin = await call(
      "DELETE",
      `/accounts/all-passkeys?email=${encodeURIComponent(member.email)}`,
      owner.auth.auth_token,
    );
    expect(byAdmin.status).toBe(200);
    expect((await logIn(suite.api, member.email)).status).toBe(200);
    expect((await readBody(await logIn(suite.api, member.email))).data.mfa_required).toBeUndefined();
  });

  test("access tokens carry auth_time, kept across refreshes; an API key cannot re-authenticate", async () => {
    const user = await signUp(suite.api, "sudo-claims");
    const authTime = jwtParts(user.auth.auth_token).payload.auth_time;
    expect(typeof authTime).toBe("number");
    const refreshed = await readBody(
      await suite.api.request("/accounts/refresh", {
        method: "POST",
        json: { refresh_token: user.auth.refresh_token },
      }),
    );
    expect(jwtParts(refreshed.data.auth_token).payload.auth_time).toBe(authTime);

    const key = (await readBody(await call("POST", "/accounts/api-keys", user.auth.auth_token, { name: "ci" }))).data
      .key;
    const byKey = await suite.api.request("/accounts/reauthenticate", {
      method: "POST",
      headers: { "x-api-key": key },
      json: { password: PASSWORD },
    });
    expect(byKey.status).toBe(403);
  });
});
