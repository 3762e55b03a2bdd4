import { expect, test } from "bun:test";
import { totpCodeFromUrl } from "@platform/core/testing";
import { sql } from "kysely";
import { PASSWORD, signUp } from "../../api/test/accounts-helpers.ts";
import { addMember } from "../../api/test/accounts-members.ts";
import { describeConsole, expectAccessible, newContext, screenshot, signInThroughPage } from "./browser.ts";

describeConsole("the account's pages", {}, (suite) => {
  test("a secret is saved by key and deleted; its value is never on the page after saving", async () => {
    const user = await signUp(suite.api, "console-secrets");
    const { page, context } = await newContext(suite.browser);
    await signInThroughPage(page, suite.origin, user.email, PASSWORD);
    await page.getByRole("link", { name: "Secrets" }).click();
    await page.getByLabel("Key").fill("stripe-key");
    await page.getByLabel("Value").fill("sk_live_do_not_show");
    await page.getByRole("button", { name: "Save secret" }).click();
    await page.getByRole("cell", { name: "stripe-key", exact: true }).waitFor();
    expect(await page.content()).not.toContain("sk_live_do_not_show");
    await expectAccessible(page);
    await screenshot(page, "secrets");
    const stored = await suite.api.request("/secrets/stripe-key", {
      headers: { authorization: `Bearer ${user.auth.auth_token}` },
    });
    expect(((await stored.json()) as { value: string }).value).toBe("sk_live_do_not_show");

    await page.getByRole("button", { name: "Delete secret stripe-key" }).click();
    await page.getByText("No secrets yet.").waitFor();
    await context.close();
  });

  test("an API key is made with allowed paths, shown once with a copy button, and does only what it names", async () => {
    const user = await signUp(suite.api, "console-keys");
    const { page, context } = await newContext(suite.browser);
    await context.grantPermissions(["clipboard-read", "clipboard-write"]);
    await signInThroughPage(page, suite.origin, user.email, PASSWORD);
    await page.getByRole("link", { name: "API keys" }).click();
    await page.getByLabel("Name").fill("deploy bot");
    await page.getByLabel("Allowed paths").fill("not a path");
    await page.getByRole("button", { name: "Create key" }).click();
    await page.locator(".field-error").first().waitFor();
    await page.getByLabel("Allowed paths").fill("GET /flows");
    await page.getByRole("button", { name: "Create key" }).click();
    const shown = (await page.locator(".secret-once").textContent()) ?? "";
    await page.getByRole("button", { name: "Copy key" }).click();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(shown);
    await page.getByRole("cell", { name: "deploy bot", exact: true }).waitFor();
    await expectAccessible(page);
    await screenshot(page, "api-keys");

    expect((await suite.api.request("/flows", { headers: { "x-api-key": shown } })).status).toBe(200);
    expect((await suite.api.request("/secrets", { headers: { "x-api-key": shown } })).status).toBe(403);
    // Shown once: a reload lists the key by its first characters only.
    await page.reload();
    await page.getByRole("cell", { name: "deploy bot", exact: true }).waitFor();
    expect(await page.content()).not.toContain(shown);
    await context.close();
  });

  test("members are invited with a role, listed as pending, and revoked", async () => {
    const user = await signUp(suite.api, "console-members");
    const { page, context } = await newContext(suite.browser);
    await signInThroughPage(page, suite.origin, user.email, PASSWORD);
    await page.getByRole("link", { name: "Members" }).click();
    await page.getByLabel("Email").fill("new.teammate@example.com");
    await page.getByLabel("Role").selectOption("admin");
    await page.getByRole("button", { name: "Invite" }).click();
    await page.getByRole("status").getByText("Invitation ready").waitFor();
    const row = page.getByRole("row", { name: /new\.teammate@example\.com/ });
    await expect(row.textContent()).resolves.toContain("invited (pending)");
    await expect(row.textContent()).resolves.toContain("admin");
    await expectAccessible(page);
    await screenshot(page, "members");
    await page.getByRole("button", { name: "Revoke new.teammate@example.com" }).click();
    await row.waitFor({ state: "detached" });
    await context.close();
  });

  test("a member who may not invite is told so, and what to ask for", async () => {
    const owner = await signUp(suite.api, "console-owner");
    const member = await addMember(suite.api, owner.auth.auth_token, "console-member", "member");
    const { page, context } = await newContext(suite.browser);
    await signInThroughPage(page, suite.origin, member.email, PASSWORD);
    await page.getByRole("link", { name: "Members" }).click();
    await page.getByLabel("Email").fill("someone@example.com");
    await page.getByRole("button", { name: "Invite" }).click();
    const alert = page.getByRole("alert");
    await expect(alert.textContent()).resolves.toStartWith("Not allowed:");
    await expect(alert.textContent()).resolves.toContain("Ask an owner or admin");
    await expectAccessible(page);
    await screenshot(page, "members-forbidden");
    await context.close();
  });

  test("a passkey is added from the Security page and then signs its user in as the second step", async () => {
    const user = await signUp(suite.api, "console-passkey");
    const { page, context } = await newContext(suite.browser);
    const devtools = await context.newCDPSession(page);
    await devtools.send("WebAuthn.enable");
    await devtools.send("WebAuthn.addVirtualAuthenticator", {
      options: {
        protocol: "ctap2",
        transport: "internal",
        hasResidentKey: true,
        hasUserVerification: true,
        isUserVerified: true,
        automaticPresenceSimulation: true,
      },
    });
    await signInThroughPage(page, suite.origin, user.email, PASSWORD);
    await page.getByRole("link", { name: "Security" }).click();
    await page.getByRole("button", { name: "Add a passkey" }).click();
    await page.getByText("Passkey added").waitFor();
    await expectAccessible(page);
    await screenshot(page, "security");

    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(/\/console\/sign-in/);
    await page.getByLabel("Email").fill(user.email);
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("button", { name: "Use a passkey" }).click();
    await page.waitForURL(`${suite.origin}/console/flows`);
    await context.close();
  });

  test("turning TOTP on after the sign-in has aged asks for the password again, then goes on", async () => {
    const user = await signUp(suite.api, "console-reauth");
    const { page, context } = await newContext(suite.browser);
    await signInThroughPage(page, suite.origin, user.email, PASSWORD);
    // The sign-in is now an hour old.
    await sql`update auth_sessions set authenticated_at = now() - interval '1 hour'
        where user_id = (select id from users where email = ${user.email})`.execute(suite.api.services.db);
    await page.getByRole("link", { name: "Security" }).click();
    await page.getByRole("button", { name: "Set up an authenticator app" }).click();
    await page.getByRole("heading", { name: "Confirm it's you" }).waitFor();
    await expectAccessible(page);
    await screenshot(page, "confirm-its-you");
    await page.getByLabel("Current password").fill(PASSWORD);
    await page.getByRole("button", { name: "Confirm" }).click();

    const secret = (await page.locator(".secret-once").textContent()) ?? "";
    expect(secret).toMatch(/^[A-Z2-7]+$/);
    await page.getByLabel("Code").fill(totpCodeFromUrl(`otpauth://totp/x?secret=${secret}`));
    await page.getByRole("button", { name: "Turn on" }).click();
    await page.getByText("Sign-in asks for a code").waitFor();
    await context.close();
  });
});
