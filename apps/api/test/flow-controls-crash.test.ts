import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { testEnv } from "@platform/db/testing";
import { planLimitsFile } from "./context.ts";
import { CountingUpstream, PlatformProcesses, redisDeployments, stepRecordsColumn } from "./process-helpers.ts";

/**
 * The flow controls that judge a start (`start_timeout_s`, `rate_limit`, `singleton`) on
 * real processes (issue 31): an API and two workers in scale-out mode. A flow rate-limited to
 * 60 starts an hour and a flow with one run per key at a time (20 keys) each get 100
 * acknowledged starts: the first half while worker A runs alone (so that it surely holds
 * runs), the rest once worker B runs beside it. Once every start is judged and every admitted
 * run waits in its step (the upstream holds the requests open), worker A is SIGKILLed and
 * worker B takes its runs over. Every acknowledged start is there in the end, once:
 * exactly 60 and 20 ran, one per key, the rest ended `skipped` with the reason and never
 * reached the upstream; a run the kill interrupted ran its step again, on record, and was
 * not judged again into a skip.
 */
const STARTS = 100;
const RATE_LIMIT = 60;
const KEYS = 20;
/** A bound on each wait (a hang, not a timed assertion), within the test's own timeout. */
const WAIT_MS = 240_000;

for (const deployment of redisDeployments()) {
  const skip = testEnv.DATABASE_URL ? deployment.skipShared : "DATABASE_URL is not set";
  describe.skipIf(Boolean(skip))(
    `flow controls with a worker killed on ${deployment.label}${skip ? ` (skipped: ${skip})` : ""}`,
    () => {
      const upstream = new CountingUpstream(true);
      let platform: PlatformProcesses;

      beforeAll(async () => {
        platform = await PlatformProcesses.start({
          redisUrl: await deployment.shared(),
          env: {
            ...deployment.env,
            PLAN_LIMITS_FILE: planLimitsFile({ free: { outbound_requests_in_flight: STARTS } }),
          },
        });
      }, 120_000);

      afterAll(async () => {
        upstream.stop();
        await platform?.stop();
      });

      test("no acknowledged start is lost or runs twice; the controls' decisions hold across the kill", async () => {
        const token = await platform.signUp("controls-crash");
        const flowOf = async (name: string, controls: Record<string, unknown>) => {
          const created = await platform.request(
            "POST",
            "/flows",
            { name, start_timeout_s: 3600, ...controls, steps: [{ ...upstream.step(), name: "last" }] },
            token,
          );
          expect(created.status).toBe(200);
          return (created.body.data as { id: string }).id;
        };
        const rateLimited = await flowOf("rate limited", { rate_limit: { limit: RATE_LIMIT, period_s: 3600 } });
        const singleton = await flowOf("singleton", { singleton: { key: "{{trigger.k}}", mode: "skip" } });

        // Rate-limited starts are n 0–99, singleton ones 1000–1099 (key n mod 20); half of each at a time.
        const half = (from: number) => [
          ...Array.from({ length: STARTS / 2 }, (_, i) => ({ flowId: rateLimited, trigger: { n: from + i } })),
          ...Array.from({ length: STARTS / 2 }, (_, i) => ({
            flowId: singleton,
            trigger: { n: 1000 + from + i, k: (from + i) % KEYS },
          })),
        ];
        const acknowledged = new Map<string, number>();
        const startAll = async (starts: ReturnType<typeof half>) => {
          for (let from = 0; from < starts.length; from += 25) {
            const batch = starts.slice(from, from + 25);
            const answers = await Promise.all(
              batch.map(({ flowId, trigger }) => platform.request("POST", `/flows/${flowId}/runs`, trigger, token)),
            );
            answers.forEach((answer, i) => {
              expect(answer.status).toBe(200);
              acknowledged.set(answer.body.run_id as string, (batch[i] as (typeof batch)[number]).trigger.n);
            });
          }
        };
        const readRuns = () =>
          platform.database.db
            .selectFrom("runs")
            .select(["id", "flow_id", "status", "error", "end_reason", "trigger", stepRecordsColumn])
            .where("flow_id", "in", [rateLimited, singleton])
            .execute();

        const workerA = platform.worker("worker A");
        await startAll(half(0));
        // Worker A alone admits the first 50 rate-limited starts and one start of each key, and holds them.
        await platform.until(
          "worker A to hold the first half's admitted runs",
          () => (upstream.held === STARTS / 2 + KEYS ? true : undefined),
          WAIT_MS,
        );
        platform.worker("worker B");
        await startAll(half(STARTS / 2));
        // Every start is judged, and every admitted run waits in its step, held by the upstream.
        await platform.until(
          "every start to be judged and every admitted run to reach its step",
          async () => {
            const skipped = (await readRuns()).filter((run) => run.status === "skipped").length;
            const expected = STARTS - RATE_LIMIT + STARTS - KEYS;
            return upstream.held === RATE_LIMIT + KEYS && skipped === expected ? true : undefined;
          },
          WAIT_MS,
        );
        await platform.kill(workerA);
        upstream.open();

        const runs = await platform.until(
          "every run to end",
          async () => {
            const rows = await readRuns();
            return rows.every((row) => row.status !== "queued" && row.status !== "running") ? rows : undefined;
          },
          WAIT_MS,
        );

        // Every acknowledged start, and nothing else, is recorded.
        expect(runs.map((run) => run.id).sort()).toEqual([...acknowledged.keys()].sort());
        const outcomes = (flowId: string) => {
          const counts: Record<string, number> = {};
          for (const run of runs.filter((r) => r.flow_id === flowId))
            counts[run.status] = (counts[run.status] ?? 0) + 1;
          return counts;
        };
        expect(outcomes(rateLimited)).toEqual({ succeeded: RATE_LIMIT, skipped: STARTS - RATE_LIMIT });
        expect(outcomes(singleton)).toEqual({ succeeded: KEYS, skipped: STARTS - KEYS });
        // One run per key ran under the singleton.
        const ranKeys = runs
          .filter((run) => run.flow_id === singleton && run.status === "succeeded")
          .map((run) => (run.trigger as { k: number }).k);
        expect(new Set(ranKeys).size).toBe(KEYS);
        for (const run of runs.filter((r) => r.status === "skipped")) {
          expect(run.end_reason).toMatch(
            run.flow_id === rateLimited
              ? /^rate limited: 60 starts per 3600 s$/
              : /^singleton: run [0-9a-f-]{36} of key "\d+" is queued or running$/,
          );
        }

        type Attempt = { error?: string };
        const interrupted = (attempts: Attempt[]) => attempts.filter((a) => a.error?.startsWith("interrupted")).length;
        const attemptsOf = (run: (typeof runs)[number]) => run.steps?.last?.attempts ?? [];
        // The kill caught runs in flight: they were taken over, not judged again into a skip.
        expect(runs.filter((run) => interrupted(attemptsOf(run)) > 0).length).toBeGreaterThan(0);
        for (const run of runs) {
          const seen = upstream.hits.get(acknowledged.get(run.id) as number) ?? 0;
          if (run.status === "skipped") {
            expect(seen).toBe(0);
            continue;
          }
          // Its step reached the upstream once, or once more for each attempt the kill interrupted.
          expect(seen).toBeGreaterThanOrEqual(1);
          expect(seen).toBeLessThanOrEqual(1 + interrupted(attemptsOf(run)));
        }
      }, 300_000);
    },
  );
}
