import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eventually } from "@platform/core/testing";
import { type DatabaseHandle, openDatabase } from "@platform/db";
import { testEnv } from "@platform/db/testing";
import { sql } from "kysely";
import { bearer, signUp } from "./accounts-helpers.ts";
import { type FlowBody, flowsClient } from "./flows-helpers.ts";
import { startTestApi, type TestApi } from "./harness.ts";
import { type Delivered, deliver, PrivateRedis } from "./process-helpers.ts";

/**
 * Issue 9: while the database or Redis cannot take a delivery, webhook ingress answers 503
 * with Retry-After and never 200, and records nothing; once they are back it acknowledges
 * again. Scale-out (PostgreSQL and a private Redis, killed and started again) and
 * PostgreSQL with the broker on it (embedded mode given DATABASE_URL). The database is
 * made unreachable by refusing connections to it and ending those open. Embedded mode on
 * PGlite has neither: its database lives in the process.
 */
const variants = [
  { label: "scale-out (PostgreSQL and Redis)", redis: true },
  { label: "PostgreSQL with the broker on it", redis: false },
];
const skip = !testEnv.DATABASE_URL ? "DATABASE_URL is not set" : !Bun.which("redis-server") ? "no redis-server" : false;
const refused = { error: "the delivery could not be recorded; retry later" };

for (const { label, redis: withRedis } of variants) {
  describe.skipIf(Boolean(skip))(`webhook ingress during outages, ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let redis: PrivateRedis | undefined;
    let api: TestApi;
    let admin: DatabaseHandle;
    let name: string;
    let cached: FlowBody;
    let waiting: FlowBody;
    /** A flow that only computes: its runs need the database alone (they run where they are accepted). */
    let computing: FlowBody;
    /** Run ids of every acknowledged delivery. */
    const acknowledged: string[] = [];

    beforeAll(async () => {
      redis = withRedis ? await PrivateRedis.start() : undefined;
      api = await startTestApi({
        backend: "postgres",
        redis: withRedis,
        env: redis ? { REDIS_URL: redis.url, WAIT_TIMEOUT_MS: "2000" } : { WAIT_TIMEOUT_MS: "2000" },
      });
      admin = await openDatabase({ kind: "postgres", url: testEnv.DATABASE_URL as string, poolSize: 1 });
      const { rows } = await sql<{ name: string }>`select current_database() as name`.execute(api.services.db);
      name = (rows[0] as { name: string }).name;
      const { auth } = await signUp(api, "outage");
      const flows = flowsClient(api, bearer(auth.auth_token));
      const echo = { name: "echo", subject: "transform", payload: { n: "{{trigger.n}}" } };
      // A delay is the workers' to run: these runs are queued, so the outage meets the queue.
      const steps = [echo, { name: "pause", subject: "delay", payload: { ms: 1 } }];
      cached = await flows.created({ name: "outage", steps });
      computing = await flows.created({ name: "outage, computing", steps: [echo] });
      waiting = await flows.created({
        name: "outage, wait",
        trigger: { type: "webhook", response_mode: "wait" },
        steps,
      });
      // Delivered once: each process now keeps these flows in memory, so the outage meets the run's start.
      await expectAccepted(await deliver(url(cached), 0));
      await expectAccepted(await deliver(url(computing), 0));
    }, 60_000);

    afterAll(async () => {
      await sql`alter database ${sql.id(name)} with allow_connections true`.execute(admin.db).catch(() => {});
      await api?.stop();
      await admin?.close();
      await redis?.kill();
    });

    const url = (flow: FlowBody) => `${api.url}/webhooks/${flow.webhook.id}`;
    const expectAccepted = async (answer: Delivered) => {
      expect({ status: answer.status, message: answer.body.message }).toEqual({ status: 200, message: "accepted" });
      acknowledged.push(answer.body.run_id as string);
    };
    const expectRefused = (answer: Delivered) =>
      expect(answer).toEqual({ n: answer.n, status: 503, retryAfter: "5", body: refused });
    /** Delivers until acknowledged, as a sender does after a 503; each answer is a 503 or the 200. */
    const deliverUntilAccepted = async (n: number) => {
      for (;;) {
        const answer = await deliver(url(cached), n);
        if (answer.status === 200) return expectAccepted(answer);
        expectRefused(answer);
        await Bun.sleep(100);
      }
    };
    const recordedRuns = async () =>
      (await api.services.db.selectFrom("runs").select("id").execute()).map((row) => row.id).sort();

    test("while the database refuses connections: 503 with Retry-After, nothing recorded; then 200 again", async () => {
      await sql`alter database ${sql.id(name)} with allow_connections false`.execute(admin.db);
      await sql`select pg_terminate_backend(pid) from pg_stat_activity where datname = ${name}`.execute(admin.db);
      await eventually(async () => {
        const { rows } = await sql<{ open: number }>`
          select count(*)::int as open from pg_stat_activity where datname = ${name}`.execute(admin.db);
        return rows[0]?.open === 0;
      });
      for (let n = 1; n <= 5; n++) expectRefused(await deliver(url(cached), n));
      // A flow this process has not looked up yet cannot be found either: still 503, not 404.
      const uncached = await fetch(`${api.url}/webhooks/${"0".repeat(32)}`, { method: "POST", body: "{}" });
      expect({ status: uncached.status, body: await uncached.json() }).toEqual({ status: 503, body: refused });
      expectRefused(await deliver(url(waiting), 6));

      await sql`alter database ${sql.id(name)} with allow_connections true`.execute(admin.db);
      await deliverUntilAccepted(7);
      expect(await recordedRuns()).toEqual([...acknowledged].sort());
    }, 60_000);

    if (!withRedis) return;
    test("while Redis is down: 503 with Retry-After, nothing recorded; then 200 again", async () => {
      await redis?.kill();
      for (let n = 11; n <= 15; n++) expectRefused(await deliver(url(cached), n));
      expectRefused(await deliver(url(waiting), 16));

      // A run that only computes needs no queue: while the account's start count can still be
      // taken (its process holds a lease of it), it is recorded and ended; past that, refused.
      // Never a 200 for a run not recorded.
      const ended: string[] = [];
      for (let n = 21; n <= 25; n++) {
        const answer = await deliver(url(computing), n);
        if (answer.status !== 200) expectRefused(answer);
        else {
          await expectAccepted(answer);
          ended.push(answer.body.run_id as string);
        }
      }
      if (ended.length > 0) {
        const statuses = await api.services.db.selectFrom("runs").select("status").where("id", "in", ended).execute();
        expect(statuses.map((row) => row.status)).toEqual(ended.map(() => "succeeded"));
      }

      await redis?.restart();
      await deliverUntilAccepted(17);
      expect(await recordedRuns()).toEqual([...acknowledged].sort());
    }, 60_000);
  });
}
