import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { testEnv } from "@platform/db/testing";
import { planLimitsFile } from "./context.ts";
import { CountingUpstream, PlatformProcesses, redisDeployments, stepRecordsColumn } from "./process-helpers.ts";

/**
 * The crash test of issue 8, on real processes: an API and two workers in scale-out mode
 * (PostgreSQL and Redis). 500 runs of `kv.put → delay → http.request`; once every run waits
 * in its last step (the upstream holds the requests open, so both workers hold runs), worker
 * A is SIGKILLed, and worker B takes A's runs over once they have been idle long enough.
 * Every run ends `succeeded`, once; a step that was checkpointed never runs again (writes to
 * the KV bucket are counted by its revisions); a step interrupted by the crash runs again,
 * and its record says so.
 */
const RUNS = 500;
/** A bound on each wait (a hang, not a timed assertion), within the test's own timeout. */
const WAIT_MS = 240_000;

for (const deployment of redisDeployments()) {
  const skip = testEnv.DATABASE_URL ? deployment.skipShared : "DATABASE_URL is not set";
  describe.skipIf(Boolean(skip))(
    `a worker killed mid-run on ${deployment.label}${skip ? ` (skipped: ${skip})` : ""}`,
    () => {
      /** Counts requests to /hit/<n> per n; they wait at its gate until it opens. */
      const upstream = new CountingUpstream(true);
      let platform: PlatformProcesses;

      beforeAll(async () => {
        platform = await PlatformProcesses.start({
          redisUrl: await deployment.shared(),
          // Every run's request is held at once: the plan lets one account have them all in flight.
          env: { ...deployment.env, PLAN_LIMITS_FILE: planLimitsFile({ free: { outbound_requests_in_flight: RUNS } }) },
        });
      }, 120_000);

      afterAll(async () => {
        upstream.stop();
        await platform?.stop();
      });

      test("every run succeeds once; checkpointed steps never run again; interrupted ones run again, on record", async () => {
        const json = (path: string, body: unknown, token?: string) =>
          platform.request(path.startsWith("/storage/kv/") ? "PUT" : "POST", path, body, token);
        const token = await platform.signUp("crash");
        expect((await json("/storage/kv/first", { description: "one write per run" }, token)).status).toBe(200);
        const flow = await json(
          "/flows",
          {
            name: "crash test",
            steps: [
              {
                name: "first",
                subject: "kv.put",
                payload: { bucket: "first", key: "run-{{trigger.n}}", value: "{{trigger.n}}" },
              },
              { name: "pause", subject: "delay", payload: { ms: 1500 } },
              { ...upstream.step(), name: "last" },
            ],
          },
          token,
        );
        expect(flow.status).toBe(200);
        const flowId = (flow.body.data as { id: string }).id;

        const workerA = platform.worker("worker A");
        platform.worker("worker B");
        const runIds: string[] = [];
        for (let from = 0; from < RUNS; from += 25) {
          const batch = Array.from({ length: Math.min(25, RUNS - from) }, (_, i) => from + i);
          const started = await Promise.all(batch.map((n) => json(`/flows/${flowId}/runs`, { n }, token)));
          for (const answer of started) {
            expect(answer.status).toBe(200);
            runIds.push(answer.body.run_id as string);
          }
        }

        // Every run waits in its last step, its request held open by the upstream. A worker holds
        // at most 256 runs at once (4 members of 64), so both workers hold runs now.
        await platform.until(
          "every run to reach its last step",
          () => (upstream.held === RUNS ? true : undefined),
          WAIT_MS,
        );
        await platform.kill(workerA);
        upstream.open();

        const runs = await platform.until(
          "every run to end",
          async () => {
            const rows = await platform.database.db
              .selectFrom("runs")
              .select(["id", "status", "error", stepRecordsColumn])
              .where("flow_id", "=", flowId)
              .execute();
            return rows.every((row) => row.status === "succeeded" || row.status === "failed") ? rows : undefined;
          },
          WAIT_MS,
        );

        // Every accepted run, and nothing else, ran to success.
        expect(runs.map((run) => run.id).sort()).toEqual([...runIds].sort());
        expect(runs.filter((run) => run.status !== "succeeded").map((run) => run.error)).toEqual([]);

        type Attempt = { error?: string };
        const stepsOf = (run: (typeof runs)[number]) => run.steps ?? {};
        const interrupted = (attempts: Attempt[]) => attempts.filter((a) => a.error?.startsWith("interrupted")).length;

        // The kill caught runs in flight: their open attempt was found and run again.
        const resumed = runs.filter((run) => interrupted(stepsOf(run).last?.attempts ?? []) > 0);
        expect(resumed.length).toBeGreaterThan(0);

        // The upstream saw each run's last step once, or once more for each attempt the crash interrupted.
        const trigger = await platform.database.db
          .selectFrom("runs")
          .select(["id", "trigger"])
          .where("flow_id", "=", flowId)
          .execute();
        const nOf = new Map(trigger.map((row) => [row.id, String((row.trigger as { n: number }).n)]));
        for (const run of runs) {
          const attempts = stepsOf(run).last?.attempts ?? [];
          expect(attempts.at(-1)?.error).toBeUndefined();
          const seen = upstream.hits.get(Number(nOf.get(run.id))) ?? 0;
          expect(seen).toBeGreaterThanOrEqual(1);
          expect(seen).toBeLessThanOrEqual(1 + interrupted(attempts));
          // A delay and a first step checkpointed before the kill were not done again.
          expect(stepsOf(run).pause?.attempts).toHaveLength(1);
        }

        // One KV write per run: revisions count every write to the bucket, so 500 keys whose
        // newest revision is 500 were written 500 times (plus one per interrupted attempt, if any).
        const firstInterrupted = runs.reduce((sum, run) => sum + interrupted(stepsOf(run).first?.attempts ?? []), 0);
        const revisions = await Promise.all(
          Array.from({ length: RUNS }, (_, n) =>
            fetch(`${platform.api}/storage/kv/first/keys/run-${n}`, {
              headers: { authorization: `Bearer ${token}` },
            }).then(async (r) => ((await r.json()) as { value: number; revision: number }).revision),
          ),
        );
        expect(revisions.every((revision) => Number.isInteger(revision))).toBe(true);
        expect(Math.max(...revisions)).toBeGreaterThanOrEqual(RUNS);
        expect(Math.max(...revisions)).toBeLessThanOrEqual(RUNS + firstInterrupted);
      }, 300_000);
    },
  );
}
