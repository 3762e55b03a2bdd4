import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { createLogger, housekeep, housekeepingJob, PLATFORM_SCOPE, platformJobs } from "@platform/core";
import { totpCodeFromUrl } from "@platform/core/testing";
import { bearer, logIn, logInFully, readBody, signUp } from "./accounts-helpers.ts";
import { runModes, startTestApi, type TestApi } from "./harness.ts";

const HOUR_MS = 3_600_000;
const logger = createLogger({ level: "silent", name: "housekeeping-test" });

for (const { backend, redis, label, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(`housekeeping on ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;
    beforeAll(async () => {
      api = await startTestApi({
        backend,
        redis,
        env: { REFRESH_TOKEN_TTL_SECONDS: "3600", MFA_TOKEN_TTL_SECONDS: "300", INVITATION_TTL_SECONDS: "3600" },
      });
    }, 60_000);
    afterAll(() => api.stop());

    const post = (path: string, json: unknown, token?: string) =>
      api.request(path, { method: "POST", json, headers: token ? bearer(token) : {} });
    const refresh = (refreshToken: string) => post("/accounts/refresh", { refresh_token: refreshToken });

    async function count(
      table: "auth_sessions" | "refresh_tokens" | "mfa_challenges" | "passkey_registrations" | "invitations",
    ) {
      const row = await api.services.db
        .selectFrom(table)
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .executeTakeFirstOrThrow();
      return Number(row.n);
    }
    const counts = async () => ({
      sessions: await count("auth_sessions"),
      refreshTokens: await count("refresh_tokens"),
      mfaChallenges: await count("mfa_challenges"),
      passkeyRegistrations: await count("passkey_registrations"),
      invitations: await count("invitations"),
    });

    test("runs as one of the platform's periodic jobs", () => {
      expect(platformJobs(api.services).map((job) => job.name)).toContain("housekeeping");
    });

    test("vacuums an embedded database's tables, and leaves a server's to its own autovacuum", () => {
      const names = platformJobs(api.services).map((job) => job.name);
      expect(names.includes("vacuum")).toBe(api.services.database.kind === "pglite");
    });

    test("makes an embedded database's checkpoints, and leaves a server's to its own checkpointer", () => {
      const names = platformJobs(api.services).map((job) => job.name);
      expect(names.includes("checkpoint")).toBe(api.services.database.kind === "pglite");
    });

    test("expired sign-ins, refresh tokens, MFA and WebAuthn challenges and invitations go, in batches, by the clock it is given", async () => {
      const start = Date.now();
      // Four sign-ins of one user, the first refreshed once (its spent token is kept until it expires).
      const ada = await signUp(api, "hk-ada");
      const signIns = [ada.auth, await logInFully(api, ada.email), await logInFully(api, ada.email)];
      const rotated = await readBody(await refresh(ada.auth.refresh_token));
      const lasting = await logInFully(api, ada.email);
      // A passkey registration left half-way, and a password sign-in waiting for its TOTP code.
      expect((await post("/accounts/passkeys/register-options", undefined, ada.auth.auth_token)).status).toBe(200);
      const bob = await signUp(api, "hk-bob");
      const setup = await readBody(await post("/accounts/totp/setup", undefined, bob.auth.auth_token));
      const code = totpCodeFromUrl(setup.data.otpauth_url);
      expect((await post("/accounts/totp/verify", { code }, bob.auth.auth_token)).status).toBe(200);
      expect((await readBody(await logIn(api, bob.email))).data.mfa_required).toBe(true);
      // An invitation nobody accepts (one hour).
      const invitation = await readBody(
        await post("/accounts/users", { email: "hk-nobody@example.com", role: "member" }, bob.auth.auth_token),
      );

      const before = await counts();
      expect(before).toEqual({
        sessions: 5,
        refreshTokens: 6,
        mfaChallenges: 1,
        passkeyRegistrations: 1,
        invitations: 1,
      });

      let now = new Date(start);
      const options = { db: api.services.db, broker: api.services.broker, groups: [], now: () => now, batchSize: 2 };
      const signal = new AbortController().signal;

      // Nothing has expired yet.
      await housekeepingJob(options).run({ signal, logger });
      expect(await counts()).toEqual(before);

      // Seven minutes on: the challenges (five minutes) have expired, a minute's grace has passed.
      now = new Date(start + 7 * 60_000);
      const challenges = await housekeep(options);
      expect(challenges.removed).toEqual({
        refresh_tokens: 0,
        auth_sessions: 0,
        mfa_challenges: 1,
        passkey_registrations: 1,
        invitations: 0,
        password_resets: 0,
        rate_limit_tallies: 0,
      });
      expect(await counts()).toEqual({ ...before, mfaChallenges: 0, passkeyRegistrations: 0 });
      const used = await refresh(lasting.refresh_token);
      expect(used.status).toBe(200);

      // That sign-in is used again and again: its refresh token now lasts beyond the clock below.
      const current = (await readBody(used)).data.refresh_token as string;
      await api.services.db
        .updateTable("refresh_tokens")
        .set({ expires_at: new Date(start + 3 * HOUR_MS) })
        .where("token_hash", "=", createHash("sha256").update(current).digest("hex"))
        .execute();

      // Two hours on: the other sign-ins (one-hour refresh tokens) are over, batch by batch.
      now = new Date(start + 2 * HOUR_MS);
      const sessions = await housekeep(options);
      expect(sessions.removed).toEqual({
        refresh_tokens: 6,
        auth_sessions: 4,
        mfa_challenges: 0,
        passkey_registrations: 0,
        invitations: 1,
        password_resets: 0,
        rate_limit_tallies: 0,
      });
      expect(await counts()).toEqual({
        sessions: 1,
        refreshTokens: 1,
        mfaChallenges: 0,
        passkeyRegistrations: 0,
        invitations: 0,
      });
      const late = await post("/accounts/invitations/accept", {
        token: invitation.data.invitation.token,
        password: "a long enough password",
      });
      expect(late.status).toBe(400);
      // What a client sees: the lasting sign-in still refreshes; the others' tokens are simply unknown.
      expect((await refresh(current)).status).toBe(200);
      const gone = await refresh(rotated.data.refresh_token);
      expect(gone.status).toBe(401);
      expect(await readBody(gone)).toEqual({ error: "invalid refresh token" });
      for (const signIn of signIns) expect((await refresh(signIn.refresh_token)).status).toBe(401);
    });

    test("stopped workers' names leave the consumer groups; a member holding entries stays", async () => {
      const { broker } = api.services;
      const stream = `hk-stream-${label}`;
      const group = "hk-group";
      await broker.ensureGroup(PLATFORM_SCOPE, stream, group);
      await broker.append(PLATFORM_SCOPE, stream, "first");
      await broker.append(PLATFORM_SCOPE, stream, "second");
      const [done] = await broker.readGroup(PLATFORM_SCOPE, stream, group, "stopped-worker:0");
      await broker.ack(PLATFORM_SCOPE, stream, group, done ? [done.id] : []);
      const [held] = await broker.readGroup(PLATFORM_SCOPE, stream, group, "busy-worker:0");

      const groups = [{ scope: PLATFORM_SCOPE, stream, group }];
      const options = { db: api.services.db, broker, groups, now: () => new Date() };
      // Idle for less than an hour: kept.
      expect((await housekeep(options)).consumers).toEqual({});
      const report = await housekeep({ ...options, consumerIdleMs: 0 });
      // Redis remembers every name that read; the PostgreSQL adapter keeps none without entries.
      expect(report.consumers).toEqual(redis ? { [`${stream}/${group}`]: ["stopped-worker:0"] } : {});
      const members = await broker.consumers(PLATFORM_SCOPE, stream, group);
      expect(members.map((member) => [member.name, member.pending])).toEqual([["busy-worker:0", 1]]);
      expect(await broker.ack(PLATFORM_SCOPE, stream, group, held ? [held.id] : [])).toBe(1);
    });
  });
}
