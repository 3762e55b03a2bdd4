import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createLogger, platformJobs } from "@platform/core";
import { runPartitions } from "@platform/db";
import { bearer, signUp } from "./accounts-helpers.ts";
import { addMember } from "./accounts-members.ts";
import { type Caller, call, newCaller } from "./context.ts";
import { runModes, startTestApi, type TestApi } from "./harness.ts";

const logger = createLogger({ level: "silent", name: "retention-test" });

const DAY_MS = 86_400_000;

/**
 * Run retention (issue 19): runs older than RUN_RETENTION_DAYS are deleted by the worker, in
 * batches; an account may keep its runs for less (`PUT /accounts/settings`), never more.
 */
for (const { label, backend, redis, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(`run retention on ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;
    let brief: Caller;
    let usual: Caller;

    beforeAll(async () => {
      api = await startTestApi({ backend, redis, env: { RUN_RETENTION_DAYS: "30" } });
      brief = await newCaller(api, "retention-brief");
      usual = await newCaller(api, "retention-usual");
    }, 60_000);
    afterAll(() => api.stop());

    /** Runs of a new flow of the caller's, accepted `ages` days ago (ended, unless `status` says otherwise). */
    async function oldRuns(caller: Caller, ages: number[], status: "succeeded" | "queued" = "succeeded") {
      const created = await call(api, caller, "POST", "/flows", {
        name: "aged",
        steps: [{ name: "s", subject: "transform", payload: {} }],
      });
      const flow = await api.services.db
        .selectFrom("flows")
        .select(["id", "account_id"])
        .where("id", "=", created.body.data.id)
        .executeTakeFirstOrThrow();
      const rows = ages.map((days) => {
        const at = Date.now() - days * DAY_MS;
        return {
          id: Bun.randomUUIDv7("hex", at),
          account_id: flow.account_id,
          flow_id: flow.id,
          revision: 1,
          status,
          trigger: "{}",
          created_at: new Date(at),
        };
      });
      await api.services.db.insertInto("runs").values(rows).execute();
      return rows.map((row) => row.id);
    }

    const kept = async (caller: Caller, ids: string[]) => {
      const answers = await Promise.all(ids.map((id) => call(api, caller, "GET", `/runs/${id}`)));
      return answers.map((answer) => answer.status === 200);
    };

    async function runJob(name: string) {
      const job = platformJobs(api.services).find((candidate) => candidate.name === name);
      if (!job) throw new Error(`no job ${name}`);
      await job.run({ signal: new AbortController().signal, logger });
    }
    const retain = () => runJob("run-retention");

    test("the worker keeps a week of daily partitions ahead, for runs and their steps alike", async () => {
      await runJob("run-partitions");
      const [runs, steps] = await Promise.all([
        runPartitions(api.services.db, "runs"),
        runPartitions(api.services.db, "run_steps"),
      ]);
      expect((runs.at(-1)?.to ?? 0) - Date.now()).toBeGreaterThan(7 * DAY_MS);
      expect(runs.slice(1).every((partition) => partition.to - (partition.from ?? 0) === DAY_MS)).toBe(true);
      expect(steps.map((partition) => partition.to)).toEqual(runs.map((partition) => partition.to));
    });

    test("an account that keeps its runs for less loses its older runs; the others keep theirs", async () => {
      expect(await call(api, brief, "GET", "/accounts/settings")).toMatchObject({
        status: 200,
        body: { data: { run_retention_days: 30, run_retention_days_max: 30 } },
      });
      expect(await call(api, brief, "PUT", "/accounts/settings", { run_retention_days: 7 })).toMatchObject({
        status: 200,
        body: { data: { run_retention_days: 7, run_retention_days_max: 30 } },
      });
      const briefRuns = await oldRuns(brief, [3, 10, 40]);
      const briefWaiting = await oldRuns(brief, [10], "queued");
      const usualRuns = await oldRuns(usual, [3, 10, 40]);
      await retain();
      expect(await kept(brief, briefRuns)).toEqual([true, false, false]);
      expect(await kept(brief, briefWaiting)).toEqual([true]);
      expect(await kept(usual, usualRuns)).toEqual([true, true, false]);

      // Given back, the deployment's retention holds again.
      expect(await call(api, brief, "PUT", "/accounts/settings", { run_retention_days: null })).toMatchObject({
        status: 200,
        body: { data: { run_retention_days: 30 } },
      });
      const later = await oldRuns(brief, [10]);
      await retain();
      expect(await kept(brief, later)).toEqual([true]);
    });

    test("throttle turns go a day past, the longest period; the later ones stay", async () => {
      const created = await call(api, usual, "POST", "/flows", {
        name: "throttled",
        throttle: { limit: 2, period_s: 86_400, key: "{{trigger.customer}}" },
        steps: [{ name: "s", subject: "transform", payload: {} }],
      });
      const flowId = created.body.data.id;
      const hoursAgo = [49, 25, 23, 1, -2];
      await api.services.db
        .insertInto("throttle_turns")
        .values(
          hoursAgo.map((hours, i) => ({
            flow_id: flowId,
            throttle_key: "acme",
            seq: i + 1,
            at: new Date(Date.now() - hours * 3_600_000),
          })),
        )
        .execute();
      await retain();
      const left = await api.services.db
        .selectFrom("throttle_turns")
        .select("seq")
        .where("flow_id", "=", flowId)
        .orderBy("seq")
        .execute();
      expect(left.map((turn) => turn.seq)).toEqual([3, 4, 5]);
    });

    test("a key that does not name the settings is refused them (403), and nothing changes", async () => {
      const key = await call(api, usual, "POST", "/accounts/api-keys", {
        name: "reader",
        allowed_paths: ["GET /accounts/settings"],
      });
      const reader = { headers: { "x-api-key": key.body.data.key as string } };
      expect((await call(api, reader, "GET", "/accounts/settings")).status).toBe(200);
      expect((await call(api, reader, "PUT", "/accounts/settings", { run_retention_days: 1 })).status).toBe(403);
      expect((await call(api, usual, "GET", "/accounts/settings")).body.data.run_retention_days).toBe(30);
    });

    test("the settings are administration: a signed-in owner or admin changes them, never an API key nor a member", async () => {
      const owner = await signUp(api, "retention-admin");
      const ownerCaller = { headers: bearer(owner.auth.auth_token) };
      const keyOf = async (allowed_paths?: string[]) => {
        const made = await call(api, ownerCaller, "POST", "/accounts/api-keys", { name: "k", allowed_paths });
        return { headers: { "x-api-key": made.body.data.key as string } };
      };
      const signedIn = "this operation needs a signed-in user (Bearer token), not an API key";
      // An unrestricted key acts as its owner elsewhere; one naming the operation is no different.
      const unrestricted = await keyOf();
      for (const key of [unrestricted, await keyOf(["PUT /accounts/settings"])]) {
        expect(await call(api, key, "PUT", "/accounts/settings", { run_retention_days: 1 })).toMatchObject({
          status: 403,
          body: { error: signedIn },
        });
        const trpc = await call(api, key, "POST", "/trpc/accounts.settings.update", { run_retention_days: 1 });
        expect({ status: trpc.status, message: trpc.body.error?.message }).toEqual({ status: 403, message: signedIn });
      }
      expect((await call(api, unrestricted, "GET", "/accounts/settings")).status).toBe(200);
      const member = await addMember(api, owner.auth.auth_token, "retention-member", "member");
      expect(
        await call(api, { headers: bearer(member.auth.auth_token) }, "PUT", "/accounts/settings", {
          run_retention_days: 1,
        }),
      ).toMatchObject({ status: 403, body: { error: "only owners and admins can change the account's settings" } });
      expect((await call(api, ownerCaller, "GET", "/accounts/settings")).body.data.run_retention_days).toBe(30);
      const admin = await addMember(api, owner.auth.auth_token, "retention-admin-user", "admin");
      expect(
        await call(api, { headers: bearer(admin.auth.auth_token) }, "PUT", "/accounts/settings", {
          run_retention_days: 2,
        }),
      ).toMatchObject({ status: 200, body: { data: { run_retention_days: 2 } } });
    });

    test("a value of another JSON type or a field the settings do not have is a 400 naming it, never read as days", async () => {
      const wholeDays = "invalid input: run_retention_days: must be a whole number of days, or null";
      const problems = [{ path: "run_retention_days", message: "must be a whole number of days, or null" }];
      // The REST adapter would have read `true` as 1 day, `"7"` and `[7]` as 7.
      for (const value of [true, false, "7", [7], "", 7.5, {}]) {
        const answered = await call(api, usual, "PUT", "/accounts/settings", { run_retention_days: value });
        expect({ value, status: answered.status, body: answered.body }).toEqual({
          value,
          status: 400,
          body: { error: wholeDays, problems },
        });
      }
      expect(
        await call(api, usual, "PUT", "/accounts/settings", { run_retention_days: 7, run_retention: 1 }),
      ).toMatchObject({ status: 400, body: { error: 'invalid input: body: Unrecognized key: "run_retention"' } });
      const trpc = await call(api, usual, "POST", "/trpc/accounts.settings.update", { run_retention_days: "7" });
      expect({ status: trpc.status, message: trpc.body.error?.message }).toEqual({ status: 400, message: wholeDays });
      expect((await call(api, usual, "GET", "/accounts/settings")).body.data.run_retention_days).toBe(30);
    });

    test("longer than the deployment keeps, or less than a day, is a 400 naming it", async () => {
      expect(await call(api, usual, "PUT", "/accounts/settings", { run_retention_days: 31 })).toMatchObject({
        status: 400,
        body: { error: "invalid input: run_retention_days: must be at most 30 (the deployment's RUN_RETENTION_DAYS)" },
      });
      expect(await call(api, usual, "PUT", "/accounts/settings", { run_retention_days: 0 })).toMatchObject({
        status: 400,
        body: { error: "invalid input: run_retention_days: must be at least 1" },
      });
    });
  });
}
