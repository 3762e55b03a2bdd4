import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { testEnv } from "@platform/db/testing";
import { planLimitsFile } from "./context.ts";
import {
  CountingUpstream,
  type Delivered,
  deliverAll,
  endedRuns,
  interruptedAttempts,
  PlatformProcesses,
  redisDeployments,
} from "./process-helpers.ts";

/**
 * Issue 9's crash test, on real processes in scale-out mode (PostgreSQL and Redis): 1,000
 * webhooks to a public, acknowledge-mode flow whose one step calls an upstream (the side
 * effect counted), while worker A is SIGKILLed and started again half-way. Two workers of
 * 128 runs each (2 members of 64); the upstream holds every call until both are full, so
 * A dies holding 128 runs in their step. Every acknowledged webhook ends as one succeeded
 * run; the upstream saw each delivery once, or once more when the record shows the crash
 * interrupted its attempt.
 */
const WEBHOOKS = 1000;
const CAPACITY = 256;

for (const deployment of redisDeployments()) {
  const skip = testEnv.DATABASE_URL ? deployment.skipShared : "DATABASE_URL is not set";
  describe.skipIf(Boolean(skip))(
    `webhooks while a worker is killed on ${deployment.label}${skip ? ` (skipped: ${skip})` : ""}`,
    () => {
      let platform: PlatformProcesses;
      const upstream = new CountingUpstream(true);

      beforeAll(async () => {
        platform = await PlatformProcesses.start({
          redisUrl: await deployment.shared(),
          env: {
            WORKER_CONCURRENCY: "2",
            // Both workers hold every run they can at the upstream: the plan lets one account have them all in flight.
            PLAN_LIMITS_FILE: planLimitsFile({ free: { outbound_requests_in_flight: CAPACITY } }),
            ...deployment.env,
          },
        });
      }, 120_000);

      afterAll(async () => {
        upstream.stop();
        await platform?.stop();
      });

      test("every acknowledged webhook ends as one succeeded run; no side effect is lost or doubled", async () => {
        const { flowId, webhookUrl } = await platform.flow([
          upstream.step(),
          { name: "done", subject: "transform", payload: { n: "{{trigger.n}}" } },
        ]);
        const workerA = platform.worker("worker A");
        platform.worker("worker B");

        const half = Array.from({ length: WEBHOOKS / 2 }, (_, n) => n);
        const answers: Delivered[] = await deliverAll(webhookUrl, half, 32);
        // Both workers full: every run they can hold waits in its step at the upstream.
        await platform.until("both workers to hold every run they can", () =>
          upstream.held === CAPACITY ? true : undefined,
        );

        const rest = half.map((n) => n + WEBHOOKS / 2);
        const sending = deliverAll(webhookUrl, rest, 32);
        await platform.kill(workerA);
        upstream.open();
        platform.worker("worker A, again");
        answers.push(...(await sending));

        expect(answers.filter((answer) => answer.status !== 200)).toEqual([]);
        expect(answers.every((answer) => answer.body.message === "accepted")).toBe(true);
        const acknowledged = answers.map((answer) => answer.body.run_id as string);
        expect(new Set(acknowledged).size).toBe(WEBHOOKS);

        const runs = await endedRuns(platform, flowId, WEBHOOKS);
        expect(runs.map((run) => run.id).sort()).toEqual([...acknowledged].sort());
        expect(runs.filter((run) => run.status !== "succeeded").map((run) => run.error)).toEqual([]);

        const interrupted = (run: (typeof runs)[number]) => interruptedAttempts(run, "notify");
        // The runs A held were taken over and their step done again, on record.
        const resumed = runs.filter((run) => interrupted(run) > 0);
        expect(resumed.length).toBeGreaterThan(0);
        expect(resumed.length).toBeLessThanOrEqual(CAPACITY / 2);
        for (const run of runs) {
          const n = (run.trigger as { n: number }).n;
          expect({ n, hits: upstream.hits.get(n) }).toEqual({ n, hits: 1 + interrupted(run) });
        }
        expect([...upstream.hits.keys()].sort((a, b) => a - b)).toEqual(Array.from({ length: WEBHOOKS }, (_, n) => n));
      }, 300_000);
    },
  );
}
