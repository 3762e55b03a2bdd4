import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { testEnv } from "@platform/db/testing";
import { sql } from "kysely";
import { PlatformProcesses, redisDeployments, stepRecordsColumn } from "./process-helpers.ts";

/**
 * An API process killed while it runs wait-mode runs in place (issue 34), on real processes:
 * an API and a worker in scale-out mode (PostgreSQL and Redis). A flow that only computes is
 * learned by the API from one start, then 32 connections start it in wait mode over and over
 * and the API is SIGKILLed under that load. A run in place is executed before its INSERT, which
 * records it as it ended: the kill leaves no run of it behind (one executed and not recorded
 * was never accepted; its client heard nothing). Every run the database holds for the flow
 * has ended `succeeded` at once, each step run once, and every answer a client got is the
 * run's, on record.
 */
const CONNECTIONS = 32;
/** Answers the load waits for before the kill: the API is warm and busy. */
const ANSWERS_BEFORE_KILL = 400;
/** A bound on each wait (a hang, not a timed assertion), within the test's own timeout. */
const WAIT_MS = 120_000;

for (const deployment of redisDeployments()) {
  const skip = testEnv.DATABASE_URL ? deployment.skipShared : "DATABASE_URL is not set";
  describe.skipIf(Boolean(skip))(
    `an API killed while it runs wait-mode runs in place on ${deployment.label}${skip ? ` (skipped: ${skip})` : ""}`,
    () => {
      let platform: PlatformProcesses;

      beforeAll(async () => {
        // A short wait: the learning start, queued with no worker yet, answers 202 soon.
        platform = await PlatformProcesses.start({
          redisUrl: await deployment.shared(),
          env: { ...deployment.env, WAIT_TIMEOUT_MS: "1500" },
        });
      }, 120_000);

      afterAll(async () => {
        await platform?.stop();
      });

      test("every run it accepted ends succeeded, its steps run once; every answer is on record", async () => {
        const token = await platform.signUp("in-place-crash");
        const flow = await platform.request(
          "POST",
          "/flows",
          {
            name: "in-place crash test",
            steps: [
              { name: "shape", subject: "transform", payload: { n: "{{trigger.n}}", doubled: "{{trigger.n * 2}}" } },
              { name: "reply", subject: "respond", payload: { status: 201, body: "{{steps.shape}}" } },
            ],
          },
          token,
        );
        expect(flow.status).toBe(200);
        const flowId = (flow.body.data as { id: string }).id;
        const start = async (n: number) => {
          const response = await fetch(`${platform.api}/flows/${flowId}/runs?wait=true`, {
            method: "POST",
            headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
            body: JSON.stringify({ n }),
          });
          return { status: response.status, body: (await response.json()) as Record<string, unknown> };
        };

        // No worker yet: the first start is queued (202) and teaches the API the flow; the next runs in place.
        expect((await start(0)).status).toBe(202);
        expect(await start(1)).toEqual({ status: 201, body: { n: 1, doubled: 2 } });
        platform.worker("worker");

        const answered = new Map<number, { status: number; body: Record<string, unknown> }>();
        let next = 2;
        let stopped = false;
        const load = Promise.all(
          Array.from({ length: CONNECTIONS }, async () => {
            while (!stopped) {
              const n = next++;
              try {
                answered.set(n, await start(n));
              } catch {
                // The API is gone: this connection's run may or may not have been accepted.
                stopped = true;
              }
            }
          }),
        );
        await platform.until("the load to warm up", () => (answered.size >= ANSWERS_BEFORE_KILL ? true : undefined));
        await platform.kill(platform.apiProcess());
        await load;

        // Nothing the dead API accepted waits for anyone (the first start aside: queued, the worker's).
        const unended = await platform.database.db
          .selectFrom("runs")
          .select(sql<number>`count(*)::int`.as("count"))
          .where("flow_id", "=", flowId)
          .where("status", "not in", ["succeeded", "failed"])
          .where(sql<boolean>`(trigger->>'n')::int > 1`)
          .executeTakeFirstOrThrow();
        expect(unended.count).toBe(0);

        const runs = await platform.until(
          "every run to end",
          async () => {
            const rows = await platform.database.db
              .selectFrom("runs")
              .select(["id", "status", "error", "trigger", stepRecordsColumn])
              .where("flow_id", "=", flowId)
              .execute();
            return rows.every((row) => row.status === "succeeded" || row.status === "failed") ? rows : undefined;
          },
          WAIT_MS,
        );

        // Every run the database holds succeeded, once: each of its steps has one attempt.
        expect(runs.filter((run) => run.status !== "succeeded").map((run) => run.error)).toEqual([]);
        for (const run of runs) {
          expect(Object.keys(run.steps ?? {}).sort()).toEqual(["reply", "shape"]);
          expect(run.steps?.shape?.attempts).toHaveLength(1);
          expect(run.steps?.reply?.attempts).toHaveLength(1);
        }
        // One run per start it accepted, and every start a client heard the end of has its run.
        const ns = runs.map((run) => (run.trigger as { n: number }).n);
        expect(new Set(ns).size).toBe(ns.length);
        const accepted = new Set(ns);
        expect(answered.size).toBeGreaterThanOrEqual(ANSWERS_BEFORE_KILL);
        for (const [n, answer] of answered) {
          expect({ n, answer }).toEqual({ n, answer: { status: 201, body: { n, doubled: n * 2 } } });
          expect(accepted.has(n)).toBe(true);
        }
        // Beside the two learning starts and the answered ones: any recorded whose answer the kill cut.
        expect(runs.length).toBeGreaterThanOrEqual(2 + answered.size);
      }, 300_000);
    },
  );
}
