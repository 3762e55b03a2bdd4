import { expect, test } from "bun:test";
import { totpCodeFromUrl } from "@platform/core/testing";

import { bearer, logIn, logInFully, PASSWORD, readBody, signUp, uniqueEmail } from "./accounts-helpers.ts";
import { acceptInvitation, addMember, invite } from "./accounts-members.ts";
import { enableTotp, TOTP_STEP_MS } from "./accounts-totp.ts";
import { describeOnEachDatabase } from "./harness.ts";

const INVALID = { error: "this invitation is invalid, expired or already used" };

describeOnEachDatabase("accounts: invitations", { env: { APP_URL: "https://app.example.test/" } }, (suite) => {
  const inviteRaw = (token: string, json: unknown) =>
    suite.api.request("/accounts/users", { method: "POST", headers: bearer(token), json });
  const removeUser = (token: string, email: string) =>
    suite.api.request("/accounts/remove-user", { method: "DELETE", headers: bearer(token), json: { email } });
  const users = async (token: string) =>
    (await readBody(await suite.api.request("/accounts/users", { headers: bearer(token) }))).data as {
      email: string;
      role: string;
      display_name: string;
      status: string;
      expires?: number;
    }[];

  test("the pre-created-user takeover ends with no token for the victim's account", async () => {
    const attacker = await signUp(suite.api, "attacker");
    const corp = await signUp(suite.api, "corp");
    const cfo = uniqueEmail("cfo");

    // The attacker can no longer choose a password for someone else's email...
    const preCreate = await inviteRaw(attacker.auth.auth_token, {
      email: cfo,
      password: "attackerpass1",
      role: "member",
    });
    expect(preCreate.status).toBe(400);
    // ...so they invite the email and accept their own invitation, creating the user with their password.
    const attackerToken = await invite(suite.api, attacker.auth.auth_token, cfo, "member");
    expect((await acceptInvitation(suite.api, { token: attackerToken, password: "attackerpass1" })).status).toBe(200);

    // The real owner of "corp" invites the same email: nothing is added, the answer says nothing of the user.
    const corpInvite = await inviteRaw(corp.auth.auth_token, { email: cfo, role: "admin" });
    expect(corpInvite.status).toBe(200);
    const { data } = await readBody(corpInvite);
    expect(data).toEqual({
      email: cfo,
      role: "admin",
      status: "invited",
      invitation: { token: expect.stringMatching(/^inv_/), url: expect.any(String), expires: expect.any(Number) },
    });
    expect(await users(corp.auth.auth_token)).toContainEqual(
      expect.objectContaining({ email: cfo, status: "invited" }),
    );

    // The attacker removes the email from their account and signs in with the password they chose.
    expect((await removeUser(attacker.auth.auth_token, cfo)).status).toBe(200);
    const signIn = await logIn(suite.api, cfo, "attackerpass1");
    expect(signIn.status).toBe(401);
    // Accepting corp's invitation needs the existing user's password: only the attacker knows it,
    // and the attacker never saw corp's token. Whoever holds the token without the password gets nowhere.
    const legit = await acceptInvitation(suite.api, { token: data.invitation.token, password: "legitpassword1" });
    expect(legit.status).toBe(401);
    expect(await readBody(legit)).toEqual({ error: "invalid email or password" });
    expect((await users(corp.auth.auth_token)).filter((user) => user.status === "active")).toHaveLength(1);
  });

  test("inviting answers the same whether or not the email has a user", async () => {
    const owner = await signUp(suite.api, "same-answer");
    const existing = await signUp(suite.api, "same-existing");
    const answers = [];
    for (const email of [existing.email, uniqueEmail("same-new")]) {
      const response = await inviteRaw(owner.auth.auth_token, { email, role: "member" });
      expect(response.status).toBe(200);
      const { data } = await readBody(response);
      expect(data.invitation.url).toBe(`https://app.example.test/invitations/accept#token=${data.invitation.token}`);
      answers.push({ ...data, email: "", invitation: Object.keys(data.invitation) });
    }
    expect(answers[0]).toEqual(answers[1]);
  });

  test("a new email accepts with a password: a new user, signed into the inviting account; the token is spent", async () => {
    const owner = await signUp(suite.api, "inv-new");
    const email = uniqueEmail("inv-newbie");
    const token = await invite(suite.api, owner.auth.auth_token, email, "admin");
    expect(await users(owner.auth.auth_token)).toContainEqual({
      email,
      role: "admin",
      display_name: "",
      status: "invited",
      expires: expect.any(Number),
    });

    const short = await acceptInvitation(suite.api, { token, password: "short" });
    expect(short.status).toBe(400);
    expect(await readBody(short)).toEqual({
      error: "invalid input: password: must be at least 10 characters",
      problems: [{ path: "password", message: "must be at least 10 characters" }],
    });

    const accepted = await acceptInvitation(suite.api, { token, password: PASSWORD, display_name: "Nina" });
    expect(accepted.status).toBe(200);
    const { data } = await readBody(accepted);
    expect(data.account).toEqual(owner.auth.account);
    expect(await users(data.auth_token)).toContainEqual({
      email,
      role: "admin",
      display_name: "Nina",
      status: "active",
    });
    expect((await logInFully(suite.api, email)).account.id).toBe(owner.auth.account.id);

    const again = await acceptInvitation(suite.api, { token, password: PASSWORD });
    expect(again.status).toBe(400);
    expect(await readBody(again)).toEqual(INVALID);
  });

  test("an existing user accepts with their own password and keeps signing into the account they own", async () => {
    const owner = await signUp(suite.api, "inv-host");
    const guest = await signUp(suite.api, "inv-guest");
    const token = await invite(suite.api, owner.auth.auth_token, guest.email, "member");
    expect((await users(owner.auth.auth_token)).find((user) => user.email === guest.email)?.status).toBe("invited");

    const wrong = await acceptInvitation(suite.api, { token, password: "not the password" });
    expect(wrong.status).toBe(401);
    expect(await readBody(wrong)).toEqual({ error: "invalid email or password" });

    const accepted = await acceptInvitation(suite.api, { token, password: PASSWORD, display_name: "ignored" });
    expect(accepted.status).toBe(200);
    const { data } = await readBody(accepted);
    expect(data.account.id).toBe(owner.auth.account.id);
    expect(await users(owner.auth.auth_token)).toContainEqual({
      email: guest.email,
      role: "member",
      display_name: guest.email.split("@")[0] ?? "",
      status: "active",
    });
    expect((await logInFully(suite.api, guest.email)).account.id).toBe(guest.auth.account.id);
  });

  test("an existing user with a second factor accepts through auth-with-mfa", async () => {
    const owner = await signUp(suite.api, "inv-mfa-host");
    const guest = await signUp(suite.api, "inv-mfa-guest");
    const totp = await enableTotp(suite.api, guest.auth.auth_token);
    const token = await invite(suite.api, owner.auth.auth_token, guest.email, "member");

    const first = await acceptInvitation(suite.api, { token, password: PASSWORD });
    expect(first.status).toBe(200);
    const pending = (await readBody(first)).data;
    expect(pending).toEqual({ mfa_required: true, mfa_token: expect.any(String), methods: ["totp"] });
    // Not a member until the second factor is given.
    expect((await users(owner.auth.auth_token)).find((user) => user.email === guest.email)?.status).toBe("invited");

    const completed = await suite.api.request("/accounts/auth-with-mfa", {
      method: "POST",
      json: {
        mfa_token: pending.mfa_token,
        totp_code: totpCodeFromUrl(totp.otpauthUrl, totp.confirmedAt + TOTP_STEP_MS),
      },
    });
    expect(completed.status).toBe(200);
    const { data } = await readBody(completed);
    expect(data.account.id).toBe(owner.auth.account.id);
    expect(data.totp_enabled).toBe(true);
    expect((await users(owner.auth.auth_token)).find((user) => user.email === guest.email)?.status).toBe("active");
    expect((await acceptInvitation(suite.api, { token, password: PASSWORD })).status).toBe(400);
  });

  test("an expired invitation is refused and no longer listed", async () => {
    const owner = await signUp(suite.api, "inv-expired");
    const email = uniqueEmail("inv-late");
    const token = await invite(suite.api, owner.auth.auth_token, email, "member");
    await suite.api.services.db
      .updateTable("invitations")
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where("email", "=", email)
      .execute();
    const late = await acceptInvitation(suite.api, { token, password: PASSWORD });
    expect(late.status).toBe(400);
    expect(await readBody(late)).toEqual(INVALID);
    expect((await users(owner.auth.auth_token)).map((user) => user.email)).not.toContain(email);
  });

  test("remove-user revokes a pending invitation; inviting again replaces the older token", async () => {
    const owner = await signUp(suite.api, "inv-revoke");
    const email = uniqueEmail("inv-revoked");
    const revoked = await invite(suite.api, owner.auth.auth_token, email, "member");
    const removed = await removeUser(owner.auth.auth_token, email);
    expect(removed.status).toBe(200);
    expect(await readBody(removed)).toEqual({ message: "success" });
    expect((await users(owner.auth.auth_token)).map((user) => user.email)).not.toContain(email);
    expect(await readBody(await acceptInvitation(suite.api, { token: revoked, password: PASSWORD }))).toEqual(INVALID);
    expect((await removeUser(owner.auth.auth_token, email)).status).toBe(404);

    const older = await invite(suite.api, owner.auth.auth_token, email, "member");
    const newer = await invite(suite.api, owner.auth.auth_token, email, "admin");
    expect((await acceptInvitation(suite.api, { token: older, password: PASSWORD })).status).toBe(400);
    const accepted = await acceptInvitation(suite.api, { token: newer, password: PASSWORD });
    expect(accepted.status).toBe(200);
    expect(await users(owner.auth.auth_token)).toContainEqual(expect.objectContaining({ email, role: "admin" }));
  });

  test("a member cannot invite, and an unknown token is refused", async () => {
    const owner = await signUp(suite.api, "inv-perm");
    const member = await addMember(suite.api, owner.auth.auth_token, "inv-perm-member", "member");
    const byMember = await inviteRaw(member.auth.auth_token, { email: uniqueEmail("x"), role: "member" });
    expect(byMember.status).toBe(403);
    const unknown = await acceptInvitation(suite.api, { token: "inv_nothing", password: PASSWORD });
    expect(unknown.status).toBe(400);
    expect(await readBody(unknown)).toEqual(INVALID);
  });
});
