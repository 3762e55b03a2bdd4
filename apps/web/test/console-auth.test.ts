import { afterAll, beforeAll, expect, test } from "bun:test";
import { createResetLink } from "@platform/core";
import { totpCodeFromUrl } from "@platform/core/testing";
import type { Page } from "playwright-core";
import { PASSWORD, signUp, uniqueEmail } from "../../api/test/accounts-helpers.ts";
import { invite } from "../../api/test/accounts-members.ts";
import { enableTotp, TOTP_STEP_MS } from "../../api/test/accounts-totp.ts";
import { type Mailbox, startMailbox } from "../../api/test/mailbox.ts";
import { describeConsole, expectAccessible, newContext, screenshot } from "./browser.ts";

/** Where the platform sends its mails, started for each suite (they run one after another). */
let mailbox: Mailbox;

describeConsole(
  "signing in",
  { env: () => ({ SMTP_URL: mailbox.smtpUrl, MAIL_FROM: "Platform <no-reply@platform.test>" }) },
  (suite) => {
    beforeAll(async () => {
      mailbox = await startMailbox();
    });
    afterAll(async () => {
      await mailbox?.stop();
    });

    async function signInWithPassword(page: Page, email: string, password = PASSWORD) {
      if (!page.url().includes("/console/sign-in")) await page.goto(`${suite.origin}/console/sign-in`);
      await page.getByLabel("Email").fill(email);
      await page.getByLabel("Password").fill(password);
      await page.getByRole("button", { name: "Sign in" }).click();
    }

    test("a new user signs up, stays signed in across a reload, signs out, and is sent to sign in from then on", async () => {
      const { page, context, errors } = await newContext(suite.browser);
      await page.goto(`${suite.origin}/`);
      // Not signed in: the console's front door is the sign-in page, remembering where the person was going.
      await page.waitForURL(/\/console\/sign-in\?redirect=/);
      await expectAccessible(page);
      await screenshot(page, "sign-in");

      await page.getByRole("link", { name: "Create an account" }).click();
      await page.getByLabel("Account name").fill("Acme");
      await page.getByLabel("Your name").fill("Ada");
      await page.getByLabel("Email").fill(uniqueEmail("console-signup"));
      await page.getByLabel("Password").fill("short");
      await page.getByRole("button", { name: "Create account" }).click();
      // The API's complaint sits beside the field it is about.
      const passwordError = page.locator(".field", { has: page.getByLabel("Password") }).locator(".field-error");
      await expect(passwordError.textContent()).resolves.toContain("at least 10");
      await expectAccessible(page);
      await screenshot(page, "sign-up-with-error");

      await page.getByLabel("Password").fill(PASSWORD);
      await page.getByRole("button", { name: "Create account" }).click();
      await page.waitForURL(`${suite.origin}/console/flows`);
      await page.getByRole("heading", { name: "Flows" }).waitFor();
      await expect(page.getByText("Ada").count()).resolves.toBe(1);

      // The refresh token is in a cookie the page's script cannot read, sent to the session routes only.
      const cookies = await context.cookies();
      expect(cookies.map(({ name, httpOnly, sameSite, path }) => ({ name, httpOnly, sameSite, path }))).toEqual([
        { name: "console_refresh", httpOnly: true, sameSite: "Strict", path: "/console/session" },
      ]);
      expect(await page.evaluate(() => document.cookie)).toBe("");
      expect(await page.evaluate(() => JSON.stringify({ ...localStorage, ...sessionStorage }))).toBe("{}");

      await page.reload();
      await page.getByRole("heading", { name: "Flows" }).waitFor();
      expect(page.url()).toBe(`${suite.origin}/console/flows`);

      await page.getByRole("button", { name: "Sign out" }).click();
      await page.waitForURL(/\/console\/sign-in/);
      expect(await context.cookies()).toEqual([]);
      await page.goto(`${suite.origin}/console/flows`);
      await page.waitForURL(/\/console\/sign-in\?redirect=/);
      expect(errors).toEqual([]);
      await context.close();
    });

    test("a wrong password is refused on the page, the right one signs in and goes where the person was headed", async () => {
      const user = await signUp(suite.api, "console-password");
      const { page, context, errors } = await newContext(suite.browser);
      await page.goto(`${suite.origin}/console/flows/new`);
      await page.waitForURL(/\/console\/sign-in\?redirect=/);
      await signInWithPassword(page, user.email, "not the password");
      await expect(page.getByRole("alert").textContent()).resolves.toContain("invalid email or password");
      await page.getByLabel("Password").fill(PASSWORD);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.waitForURL(`${suite.origin}/console/flows/new`);
      await page.getByRole("heading", { name: "New flow" }).waitFor();
      expect(errors).toEqual([]);
      await context.close();
    });

    test("a redirect that leaves the console (dot segments, another site) signs in to the console's home instead", async () => {
      const user = await signUp(suite.api, "console-redirect");
      const { page, context, errors } = await newContext(suite.browser);
      for (const redirect of ["/console/../../gw/evil/x", "/console/..%5Cgw/evil/x", "//evil.example/console/flows"]) {
        await page.goto(`${suite.origin}/console/sign-in?redirect=${encodeURIComponent(redirect)}`);
        await signInWithPassword(page, user.email);
        await page.waitForURL((url) => !url.pathname.startsWith("/console/sign-in"));
        expect({ redirect, landed: page.url() }).toEqual({ redirect, landed: `${suite.origin}/console/flows` });
        await page.getByRole("heading", { name: "Flows" }).waitFor();
      }
      expect(errors).toEqual([]);
      await context.close();
    });

    test("a session ended elsewhere (a password reset) leads the open page to sign-in, and back after it", async () => {
      const user = await signUp(suite.api, "console-ended");
      const { page, context } = await newContext(suite.browser);
      await signInWithPassword(page, user.email);
      await page.waitForURL(`${suite.origin}/console/flows`);
      // The flows page's own calls are answered first: one refused after the reset would take the page to sign-in before the click.
      await page.waitForLoadState("networkidle");
      const link = await createResetLink(suite.api.services.accounts, user.email);
      const token = new URL(link?.url ?? "").hash.replace("#token=", "");
      const reset = await suite.api.request("/accounts/password/reset", {
        method: "POST",
        json: { token, password: "reset elsewhere, meanwhile" },
      });
      expect(reset.status).toBe(200);
      // No reload: the next call the page makes is refused, and so is the renewal.
      await page.getByRole("link", { name: "Runs" }).click();
      await page.waitForURL(/\/console\/sign-in\?redirect=%2Fconsole%2Fruns/);
      await page.getByLabel("Email").fill(user.email);
      await page.getByLabel("Password").fill("reset elsewhere, meanwhile");
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.waitForURL(`${suite.origin}/console/runs`);
      await context.close();
    });

    test("a user with TOTP gives a code after the password", async () => {
      const user = await signUp(suite.api, "console-totp");
      const { otpauthUrl, confirmedAt } = await enableTotp(suite.api, user.auth.auth_token);
      const { page, context } = await newContext(suite.browser);
      await signInWithPassword(page, user.email);
      await page.getByRole("heading", { name: "Second factor" }).waitFor();
      await expectAccessible(page);
      await screenshot(page, "second-factor");
      // The code of the step after the one that confirmed enrolment: each code is accepted once.
      await page
        .getByLabel("Code from your authenticator app")
        .fill(totpCodeFromUrl(otpauthUrl, confirmedAt + TOTP_STEP_MS));
      await page.getByRole("button", { name: "Verify" }).click();
      await page.waitForURL(`${suite.origin}/console/flows`);
      await context.close();
    });

    test("an invitation's mailed link lets a new user join with a password of their choosing", async () => {
      const owner = await signUp(suite.api, "console-inviter", { account_name: "Inviting Co" });
      const email = uniqueEmail("console-invitee");
      await invite(suite.api, owner.auth.auth_token, email, "member");
      const mail = await mailbox.waitFor(email, /invitations\/accept#token=/);
      const link = mail.text.match(/https?:\/\/\S+invitations\/accept#token=[\w-]+/)?.[0] ?? "";
      expect(link.startsWith(`${suite.origin}/invitations/accept#token=`)).toBe(true);

      const { page, context } = await newContext(suite.browser);
      await page.goto(link);
      await page.getByRole("heading", { name: "Join the account" }).waitFor();
      await expectAccessible(page);
      await screenshot(page, "accept-invitation");
      await page.getByLabel("Your name").fill("Grace");
      await page.getByLabel("Choose a password").fill("grace's own password");
      await page.getByRole("button", { name: "Accept invitation" }).click();
      await page.waitForURL(`${suite.origin}/console/flows`);
      await expect(page.locator(".account").textContent()).resolves.toBe("Inviting Co");

      // The link is spent.
      await page.goto(link);
      await page.getByLabel("Your name").fill("Mallory");
      await page.getByLabel("Choose a password").fill("another password entirely");
      await page.getByRole("button", { name: "Accept invitation" }).click();
      await expect(page.getByRole("alert").textContent()).resolves.toContain("invalid");
      await context.close();
    });

    test("an existing user accepts an invitation by proving their password, and lands in the inviting account", async () => {
      const owner = await signUp(suite.api, "console-inviter-2", { account_name: "Second Co" });
      const existing = await signUp(suite.api, "console-existing", { account_name: "Own Co" });
      await invite(suite.api, owner.auth.auth_token, existing.email, "admin");
      const mail = await mailbox.waitFor(existing.email, /invitations\/accept#token=/);
      const link = mail.text.match(/https?:\/\/\S+invitations\/accept#token=[\w-]+/)?.[0] ?? "";

      const { page, context } = await newContext(suite.browser);
      await page.goto(link);
      await page.getByLabel("Yes, I have one").check();
      await page.getByLabel("Your password").fill(PASSWORD);
      await page.getByRole("button", { name: "Accept invitation" }).click();
      await page.waitForURL(`${suite.origin}/console/flows`);
      await expect(page.locator(".account").textContent()).resolves.toBe("Second Co");
      await context.close();
    });

    test("a forgotten password is reset from the mailed link, and the new one signs in", async () => {
      const user = await signUp(suite.api, "console-reset");
      const { page, context } = await newContext(suite.browser);
      await page.goto(`${suite.origin}/console/sign-in`);
      await page.getByRole("link", { name: "Forgot your password?" }).click();
      await page.getByLabel("Email").fill(user.email);
      await page.getByRole("button", { name: "Send the link" }).click();
      await page.getByRole("status").waitFor();
      await expectAccessible(page);
      await screenshot(page, "forgot-password-sent");

      const mail = await mailbox.waitFor(user.email, /password\/reset#token=/);
      const link = mail.text.match(/https?:\/\/\S+password\/reset#token=[\w-]+/)?.[0] ?? "";
      expect(link.startsWith(`${suite.origin}/password/reset#token=`)).toBe(true);
      await page.goto(link);
      await page.getByRole("heading", { name: "Choose a new password" }).waitFor();
      await expectAccessible(page);
      await page.getByLabel("New password").fill("a fresh new password");
      await page.getByRole("button", { name: "Set password" }).click();
      await page.getByRole("heading", { name: "Password changed" }).waitFor();
      await screenshot(page, "password-changed");

      await signInWithPassword(page, user.email, "a fresh new password");
      await page.waitForURL(`${suite.origin}/console/flows`);
      await context.close();
    });
  },
);
