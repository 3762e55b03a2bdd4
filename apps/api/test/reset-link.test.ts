import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { databaseBackends, testEnv } from "@platform/db/testing";
import { bearer, logIn, logInFully, readBody, signUp, uniqueEmail } from "./accounts-helpers.ts";
import { startTestApi, type TestApi } from "./harness.ts";

const script = new URL("../src/reset-link.ts", import.meta.url).pathname;

async function runResetLink(env: Record<string, string>, email: string) {
  const { PATH = "", HOME = "" } = process.env;
  const child = Bun.spawn(["bun", script, email], { env: { PATH, HOME, ...env }, stdout: "pipe", stderr: "pipe" });
  const [code, stdout, stderr] = await Promise.all([
    child.exited,
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
  ]);
  return { code, stdout, stderr };
}

describe.skipIf(Boolean(databaseBackends()[1]?.skip))("bun run accounts:reset-link on PostgreSQL", () => {
  let api: TestApi;
  let env: Record<string, string>;
  beforeAll(async () => {
    api = await startTestApi({ backend: "postgres" });
    // The script reaches the very database the test server runs on.
    const { name } = await api.services.db
      .selectNoFrom((eb) => eb.fn<string>("current_database", []).as("name"))
      .executeTakeFirstOrThrow();
    const url = new URL(testEnv.DATABASE_URL ?? "");
    url.pathname = `/${name}`;
    env = { DATABASE_URL: url.toString(), APP_URL: "https://app.test", LOG_LEVEL: "silent" };
  }, 60_000);
  afterAll(() => api?.stop());

  test("prints a single-use link for the operator; using it sets the password and ends the user's sessions", async () => {
    const user = await signUp(api, "cli-reset");
    const run = await runResetLink(env, user.email.toUpperCase());
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^https:\/\/app\.test\/password\/reset#token=pwr_[\w-]+\n$/);
    expect(run.stderr).toContain("valid once, until");
    const token = run.stdout.trim().split("#token=")[1];

    const reset = await api.request("/accounts/password/reset", {
      method: "POST",
      json: { token, password: "chosen by the user" },
    });
    expect(reset.status).toBe(200);
    expect((await api.request("/accounts/users", { headers: bearer(user.auth.auth_token) })).status).toBe(401);
    expect((await logIn(api, user.email)).status).toBe(401);
    await logInFully(api, user.email, "chosen by the user");
    const again = await api.request("/accounts/password/reset", {
      method: "POST",
      json: { token, password: "chosen by the user" },
    });
    expect(await readBody(again)).toEqual({ error: "this reset link is invalid, expired or already used" });
  });

  test("an email with no user prints nothing and exits 1", async () => {
    const email = uniqueEmail("cli-nobody");
    const run = await runResetLink(env, email);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe("");
    expect(run.stderr).toContain(`no user has the email ${email}`);
  });
});
