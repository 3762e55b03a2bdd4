import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { testEnv } from "@platform/db/testing";
import type { Server } from "bun";
import { interruptedAttempts, PlatformProcesses, redisDeployments, stepRecordsColumn } from "./process-helpers.ts";

/**
 * Concurrency limits across worker processes and a kill (issue 31): 60 runs of a flow limited
 * to 2 at once per key, over 3 keys. Worker A takes them all: the upstream each run calls
 * counts the calls in flight per key and holds them, so every key's slots are A's and the
 * other runs wait. Worker B starts, A is SIGKILLed and the upstream let go. The runs A held
 * keep their slots until B takes them over (their entries are delivered again) and ends
 * them, their interrupted call on record; the runs waiting behind them are handed the freed
 * slots. Never more than 2 calls of a key are in flight (counted once A's held calls were
 * let go), and every run succeeds.
 */
const RUNS = 60;
const KEYS = ["a", "b", "c"];
const LIMIT = 2;
/** A bound on each wait (a hang, not a timed assertion), within the test's own timeout. */
const WAIT_MS = 240_000;

for (const deployment of redisDeployments()) {
  const skip = testEnv.DATABASE_URL ? deployment.skipShared : "DATABASE_URL is not set";
  describe.skipIf(Boolean(skip))(
    `concurrency limits with a worker killed on ${deployment.label}${skip ? ` (skipped: ${skip})` : ""}`,
    () => {
      const inFlight = new Map<string, number>();
      const most = new Map<string, number>();
      let held = 0;
      let counting = false;
      const gate = Promise.withResolvers<void>();
      let upstream: Server<undefined>;
      let platform: PlatformProcesses;

      beforeAll(async () => {
        upstream = Bun.serve({
          port: 0,
          hostname: "127.0.0.1",
          idleTimeout: 0,
          async fetch(request) {
            const key = new URL(request.url).pathname.split("/").at(-1) ?? "";
            const now = (inFlight.get(key) ?? 0) + 1;
            inFlight.set(key, now);
            if (counting) most.set(key, Math.max(most.get(key) ?? 0, now));
            held++;
            await gate.promise;
            held--;
            await Bun.sleep(20);
            inFlight.set(key, (inFlight.get(key) ?? 1) - 1);
            return Response.json({ key });
          },
        });
        platform = await PlatformProcesses.start({ redisUrl: await deployment.shared(), env: deployment.env });
      }, 120_000);

      afterAll(async () => {
        gate.resolve();
        upstream?.stop(true);
        await platform?.stop();
      });

      test("never more than `limit` per key run at once; the killed worker's runs keep their slots until taken over; all succeed", async () => {
        const token = await platform.signUp("limit-crash");
        const flow = await platform.request(
          "POST",
          "/flows",
          {
            name: "limited crash",
            concurrency: { limit: LIMIT, key: "{{trigger.k}}" },
            steps: [
              {
                name: "call",
                subject: "http.request",
                payload: { url: `http://127.0.0.1:${upstream.port}/key/{{trigger.k}}`, timeout: 600_000 },
                options: { timeout: 600_000 },
              },
            ],
          },
          token,
        );
        expect(flow.status).toBe(200);
        const flowId = (flow.body.data as { id: string }).id;
        const workerA = platform.worker("worker A");
        const runIds: string[] = [];
        for (let from = 0; from < RUNS; from += 20) {
          const started = await Promise.all(
            Array.from({ length: 20 }, (_, i) =>
              platform.request("POST", `/flows/${flowId}/runs`, { k: KEYS[(from + i) % KEYS.length] }, token),
            ),
          );
          for (const answer of started) {
            expect(answer.status).toBe(200);
            runIds.push(answer.body.run_id as string);
          }
        }

        // Every key's slots are full, and the others wait: then A dies holding some of them.
        await platform.until(
          "every key's slots to be full",
          () => (held === KEYS.length * LIMIT ? true : undefined),
          WAIT_MS,
        );
        expect(KEYS.map((key) => inFlight.get(key))).toEqual(KEYS.map(() => LIMIT));
        platform.worker("worker B");
        await platform.kill(workerA);
        // A's calls were cut with it: let every held call go, and count from here.
        gate.resolve();
        await platform.until("the held calls to end", () => (held === 0 ? true : undefined), WAIT_MS);
        counting = true;

        const runs = await platform.until(
          "every run to end",
          async () => {
            const rows = await platform.database.db
              .selectFrom("runs")
              .select(["id", "status", "error", "queue_reason", stepRecordsColumn])
              .where("flow_id", "=", flowId)
              .execute();
            return rows.every((row) => row.status === "succeeded" || row.status === "failed") ? rows : undefined;
          },
          WAIT_MS,
        );
        expect(runs.map((run) => run.id).sort()).toEqual([...runIds].sort());
        expect(runs.filter((run) => run.status !== "succeeded").map((run) => run.error)).toEqual([]);
        expect(runs.every((run) => run.queue_reason === null)).toBe(true);
        // The runs A held were taken over: each key's slots, no more.
        expect(runs.filter((run) => interruptedAttempts(run, "call") > 0)).toHaveLength(KEYS.length * LIMIT);
        for (const key of KEYS) expect(most.get(key) ?? 0).toBeLessThanOrEqual(LIMIT);
      }, 300_000);
    },
  );
}
