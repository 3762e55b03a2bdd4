import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { testEnv } from "@platform/db/testing";
import {
  CountingUpstream,
  type Delivered,
  deliver,
  deliverAll,
  endedRuns,
  interruptedAttempts,
  type LosableRedis,
  PlatformProcesses,
  redisDeployments,
} from "./process-helpers.ts";

/**
 * Issue 9's second crash test: Redis (a private one, without persistence) is killed and
 * started again, empty, during ingest, on real processes in scale-out mode. Two workers of
 * 64 runs each; the upstream holds every call, so when Redis goes both workers are full and
 * the rest of the accepted runs wait in the stream. Worker A is killed just before, holding
 * 64 runs whose stream entries Redis then loses too.
 *
 * While Redis is down every webhook is answered 503 with Retry-After. Afterwards PostgreSQL
 * is the record: the recovery appends the queued runs again, and releases A's runs once
 * their leases (RUN_LEASE_MS, 6 s here) are over, while worker B, alive, keeps renewing the
 * leases of its own and finishes them itself. Every acknowledged webhook ends as one
 * succeeded run; the upstream saw each once, A's twice (its attempt interrupted, on record).
 */

const PER_WORKER = 64;
const FIRST = 300;
const WHILE_DOWN = 20;
const AFTER = 180;

for (const deployment of redisDeployments()) {
  const skip = testEnv.DATABASE_URL ? deployment.skipOwn : "DATABASE_URL is not set";
  describe.skipIf(Boolean(skip))(
    `webhooks while ${deployment.label} loses its data${skip ? ` (skipped: ${skip})` : ""}`,
    () => {
      let redis: LosableRedis;
      let platform: PlatformProcesses;
      const upstream = new CountingUpstream(true);

      beforeAll(async () => {
        redis = await deployment.own();
        platform = await PlatformProcesses.start({
          redisUrl: redis.url,
          env: { WORKER_CONCURRENCY: "1", RUN_LEASE_MS: "6000", ...deployment.env },
        });
      }, 120_000);

      afterAll(async () => {
        upstream.stop();
        await platform?.stop();
        await redis?.stop();
      });

      /** The runs of the flow a worker holds, by id, with their holder. */
      const heldRuns = async (flowId: string) =>
        new Map(
          (
            await platform.database.db
              .selectFrom("runs")
              .select(["id", "held_by"])
              .where("flow_id", "=", flowId)
              .where("held_by", "is not", null)
              .execute()
          ).map((row) => [row.id, row.held_by]),
        );

      test("acknowledged webhooks all complete once; the others were answered 503 with Retry-After", async () => {
        const { flowId, webhookUrl } = await platform.flow([upstream.step()]);
        const workerA = platform.worker("worker A");
        platform.worker("worker B");

        const before = await deliverAll(
          webhookUrl,
          Array.from({ length: FIRST }, (_, n) => n),
          32,
        );
        expect(before.filter((answer) => answer.status !== 200)).toEqual([]);
        await platform.until("both workers to hold every run they can", () =>
          upstream.held === 2 * PER_WORKER ? true : undefined,
        );
        const heldWhenLost = await heldRuns(flowId);
        expect(heldWhenLost.size).toBe(2 * PER_WORKER);

        await platform.kill(workerA);
        await redis.kill();
        const whileDown = await deliverAll(
          webhookUrl,
          Array.from({ length: WHILE_DOWN }, (_, i) => FIRST + i),
          4,
        );
        const refused = { error: "the delivery could not be recorded; retry later" };
        for (const answer of whileDown) {
          expect(answer).toEqual({ n: answer.n, status: 503, retryAfter: "5", body: refused });
        }

        await redis.restart();
        platform.worker("worker A, again");
        // A sender as the providers are: a 503 is delivered again until it is acknowledged.
        const after: Delivered[] = [];
        const acknowledgedAfter = await deliverAll(
          webhookUrl,
          Array.from({ length: AFTER }, (_, i) => FIRST + WHILE_DOWN + i),
          8,
          async (url, n) => {
            for (;;) {
              const answer = await deliver(url, n);
              after.push(answer);
              if (answer.status !== 503) return answer;
              expect(answer.retryAfter).toBe("5");
              expect(answer.body).toEqual(refused);
              await Bun.sleep(100);
            }
          },
        );
        expect(acknowledgedAfter.filter((answer) => answer.status !== 200)).toEqual([]);

        // A's runs are released once their leases are over; B's stay B's, renewed while it waits.
        await platform.until("the runs of the dead worker to be released", async () => {
          const now = await heldRuns(flowId);
          const moved = [...heldWhenLost].filter(([id, holder]) => now.get(id) !== holder);
          return moved.length === PER_WORKER ? true : undefined;
        });
        const stillHeld = await heldRuns(flowId);
        const ofB = [...heldWhenLost].filter(([id, holder]) => stillHeld.get(id) === holder).map(([id]) => id);
        expect(ofB).toHaveLength(PER_WORKER);
        upstream.open();

        const acknowledged = [...before, ...acknowledgedAfter].map((answer) => answer.body.run_id as string);
        expect(new Set(acknowledged).size).toBe(FIRST + AFTER);
        const runs = await endedRuns(platform, flowId, acknowledged.length);
        // Only acknowledged webhooks left a run; the refused ones left nothing.
        expect(runs.map((run) => run.id).sort()).toEqual([...acknowledged].sort());
        expect(runs.filter((run) => run.status !== "succeeded").map((run) => run.error)).toEqual([]);

        const interrupted = (run: (typeof runs)[number]) => interruptedAttempts(run, "notify");
        const ofA = new Set([...heldWhenLost.keys()].filter((id) => !ofB.includes(id)));
        for (const run of runs) {
          const n = (run.trigger as { n: number }).n;
          const expected = ofA.has(run.id) ? { hits: 2, interrupted: 1 } : { hits: 1, interrupted: 0 };
          expect({ n, hits: upstream.hits.get(n), interrupted: interrupted(run) }).toEqual({ n, ...expected });
        }
        for (const answer of whileDown) expect(upstream.hits.get(answer.n)).toBeUndefined();
        expect(after.filter((answer) => answer.status !== 200 && answer.status !== 503)).toEqual([]);
      }, 300_000);
    },
  );
}
