import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { totpCodeFromUrl } from "@platform/core/testing";
import { bearer, logIn, logInFully, PASSWORD, readBody, signUp, uniqueEmail } from "./accounts-helpers.ts";
import { acceptInvitation } from "./accounts-members.ts";
import { enableTotp, TOTP_STEP_MS } from "./accounts-totp.ts";
import { runModes, startPeerApi, startTestApi, type TestApi } from "./harness.ts";
import { type Mailbox, startMailbox } from "./mailbox.ts";

const NEW_PASSWORD = "a brand new password";
const FORGOT_ANSWER = { message: "if this email has a user, a reset link is on its way" };
const INVALID = { error: "this reset link is invalid, expired or already used" };
const tokenIn = (text: string) => text.match(/#token=(pwr_[\w-]+)/)?.[1] ?? "";

for (const { backend, redis, label, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(
    `accounts: password reset by email on ${label}${skip ? ` (skipped: ${skip})` : ""}`,
    () => {
      let mailbox: Mailbox;
      let api: TestApi;
      let peer: TestApi;
      beforeAll(async () => {
        mailbox = await startMailbox();
        api = await startTestApi({
          backend,
          redis,
          env: {
            SMTP_URL: mailbox.smtpUrl,
            MAIL_FROM: "Platform <no-reply@platform.test>",
            APP_URL: "https://app.test",
          },
        });
        peer = await startPeerApi(api);
      }, 60_000);
      afterAll(async () => {
        await peer?.stop();
        await api?.stop();
        await mailbox?.stop();
      });

      const forgot = (email: string) => api.request("/accounts/password/forgot", { method: "POST", json: { email } });
      const reset = (token: string, password: string) =>
        api.request("/accounts/password/reset", { method: "POST", json: { token, password } });

      test("a mailed link sets a new password once and ends every session of the user, in every process", async () => {
        const user = await signUp(api, "reset-me");
        const other = await logInFully(api, user.email);
        // Both processes have verified (and cached) the access token.
        for (const server of [api, peer]) {
          expect((await server.request("/accounts/users", { headers: bearer(other.auth_token) })).status).toBe(200);
        }

        const asked = await forgot(user.email);
        expect(asked.status).toBe(200);
        expect(await readBody(asked)).toEqual(FORGOT_ANSWER);
        const mail = await mailbox.waitFor(user.email, /password\/reset/);
        expect(mail.from).toBe("no-reply@platform.test");
        expect(mail.raw).toContain("Subject: Reset your password");
        expect(mail.text).toContain("https://app.test/password/reset#token=pwr_");
        const token = tokenIn(mail.text);

        const short = await reset(token, "short");
        expect(short.status).toBe(400);
        expect(await readBody(short)).toEqual({
          error: "invalid input: password: must be at least 10 characters",
          problems: [{ path: "password", message: "must be at least 10 characters" }],
        });

        const done = await reset(token, NEW_PASSWORD);
        expect(done.status).toBe(200);
        expect(await readBody(done)).toEqual({ message: "success" });

        for (const server of [api, peer]) {
          for (const auth of [user.auth, other]) {
            const refused = await server.request("/accounts/users", { headers: bearer(auth.auth_token) });
            expect(refused.status).toBe(401);
          }
        }
        for (const auth of [user.auth, other]) {
          const refresh = await api.request("/accounts/refresh", {
            method: "POST",
            json: { refresh_token: auth.refresh_token },
          });
          expect(refresh.status).toBe(401);
        }
        expect((await logIn(api, user.email, PASSWORD)).status).toBe(401);
        expect((await logInFully(api, user.email, NEW_PASSWORD)).account.id).toBe(user.auth.account.id);

        const again = await reset(token, "yet another password");
        expect(again.status).toBe(400);
        expect(await readBody(again)).toEqual(INVALID);
      });

      test("asking for an unknown email answers the same and sends nothing", async () => {
        const nobody = uniqueEmail("nobody");
        const asked = await forgot(nobody);
        expect(asked.status).toBe(200);
        expect(await readBody(asked)).toEqual(FORGOT_ANSWER);
        // A mail to a real user asked afterwards arrives; none ever went to the unknown email.
        const user = await signUp(api, "reset-marker");
        await forgot(user.email);
        await mailbox.waitFor(user.email);
        expect(mailbox.messages.filter((mail) => mail.to.includes(nobody))).toEqual([]);
      });

      test("an expired link is refused, and a newer link replaces an older one", async () => {
        const user = await signUp(api, "reset-late");
        await forgot(user.email);
        const older = tokenIn((await mailbox.waitFor(user.email)).text);
        await forgot(user.email);
        let newer = "";
        await mailbox.waitFor(user.email, new RegExp(`#token=(?!${older})`));
        newer = tokenIn(mailbox.messages.filter((mail) => mail.to.includes(user.email)).at(-1)?.text ?? "");
        expect(newer).not.toBe(older);
        expect(await readBody(await reset(older, NEW_PASSWORD))).toEqual(INVALID);

        await api.services.db
          .updateTable("password_resets")
          .set({ expires_at: new Date(Date.now() - 1000) })
          .execute();
        const late = await reset(newer, NEW_PASSWORD);
        expect(late.status).toBe(400);
        expect(await readBody(late)).toEqual(INVALID);
        expect((await logIn(api, user.email, PASSWORD)).status).toBe(200);
      });

      test("with a second factor, the next sign-in after a reset still asks for it", async () => {
        const user = await signUp(api, "reset-mfa");
        const totp = await enableTotp(api, user.auth.auth_token);
        await forgot(user.email);
        expect((await reset(tokenIn((await mailbox.waitFor(user.email)).text), NEW_PASSWORD)).status).toBe(200);
        const signIn = await readBody(await logIn(api, user.email, NEW_PASSWORD));
        expect(signIn.data.mfa_required).toBe(true);
        const completed = await api.request("/accounts/auth-with-mfa", {
          method: "POST",
          json: {
            mfa_token: signIn.data.mfa_token,
            totp_code: totpCodeFromUrl(totp.otpauthUrl, totp.confirmedAt + TOTP_STEP_MS),
          },
        });
        expect(completed.status).toBe(200);
      });

      test("the victim of a pre-created user takes the email back by reset, then accepts the real invitation", async () => {
        const attacker = await signUp(api, "squatter");
        const corp = await signUp(api, "corp-reset");
        const cfo = uniqueEmail("cfo-reset");
        const squat = await api.request("/accounts/users", {
          method: "POST",
          headers: bearer(attacker.auth.auth_token),
          json: { email: cfo, role: "member" },
        });
        const squatToken = (await readBody(squat)).data.invitation.token;
        expect((await acceptInvitation(api, { token: squatToken, password: "attackerpass1" })).status).toBe(200);

        const invited = await api.request("/accounts/users", {
          method: "POST",
          headers: bearer(corp.auth.auth_token),
          json: { email: cfo, role: "admin" },
        });
        // The invitation is mailed to the real owner of the email.
        const token = (await readBody(invited)).data.invitation.token;
        const invitationMail = await mailbox.waitFor(cfo, /corp-reset inc/);
        expect(invitationMail.raw).toContain("Subject: You are invited to corp-reset inc");
        expect(invitationMail.text).toContain(`https://app.test/invitations/accept#token=${token}`);

        await forgot(cfo);
        expect(
          (await reset(tokenIn((await mailbox.waitFor(cfo, /password\/reset/)).text), "legitpassword1")).status,
        ).toBe(200);
        const accepted = await acceptInvitation(api, { token, password: "legitpassword1" });
        expect(accepted.status).toBe(200);
        expect((await readBody(accepted)).data.account.id).toBe(corp.auth.account.id);
        expect((await logIn(api, cfo, "attackerpass1")).status).toBe(401);
      });
    },
  );
}
