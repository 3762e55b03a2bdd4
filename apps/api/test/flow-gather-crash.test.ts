import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { testEnv } from "@platform/db/testing";
import { CountingUpstream, PlatformProcesses, redisDeployments, stepRecordsColumn } from "./process-helpers.ts";

/**
 * Debounce and batch across processes (issue 31): an API and three workers in scale-out mode
 * take bursts of starts of ten keys for a debounced flow and a batched one. Worker A alone
 * takes the first wave; once its runs hold requests open at the upstream (others wait in
 * their windows and batches, or are being decided), workers B and C start, A is SIGKILLed,
 * and a second wave of starts goes on without it. Every
 * acknowledged start is accounted for, once: a debounced start ran or was skipped in favour
 * of a run that ran, and each key's last start ran; a batched start's data is in exactly one
 * batch run's trigger, which ran; and no run's step reached the upstream more than once but
 * for attempts the kill interrupted, on record.
 */
const KEYS = 10;
/** Starts per wave and flow. */
const WAVE = 100;
/** A bound on each wait (a hang, not a timed assertion), within the test's own timeout. */
const WAIT_MS = 240_000;
const FINAL = new Set(["succeeded", "failed", "skipped", "batched", "cancelled"]);

for (const deployment of redisDeployments()) {
  const skip = testEnv.DATABASE_URL ? deployment.skipShared : "DATABASE_URL is not set";
  describe.skipIf(Boolean(skip))(
    `debounced and batched starts with a worker killed on ${deployment.label}${skip ? ` (skipped: ${skip})` : ""}`,
    () => {
      /** Counts requests to /hit/<n>: n is a debounced run's start, or a batch run's first start. */
      const upstream = new CountingUpstream(true);
      let platform: PlatformProcesses;

      beforeAll(async () => {
        platform = await PlatformProcesses.start({ redisUrl: await deployment.shared(), env: deployment.env });
      }, 120_000);

      afterAll(async () => {
        upstream.stop();
        await platform?.stop();
      });

      test("every acknowledged start is run once, in its own run or in the one that took it", async () => {
        const token = await platform.signUp("gather-crash");
        const call = upstream.step();
        const flowOf = async (name: string, settings: object, url: string) => {
          const created = await platform.request(
            "POST",
            "/flows",
            { name, ...settings, steps: [{ ...call, payload: { ...call.payload, url } }] },
            token,
          );
          expect(created.status).toBe(200);
          return (created.body.data as { id: string }).id;
        };
        const hitUrl = (n: string) => call.payload.url.replace("{{trigger.n}}", n);
        const debounced = await flowOf(
          "debounced",
          { debounce: { period_s: 1, timeout_s: 3, key: "{{trigger.k}}" } },
          hitUrl("{{trigger.n}}"),
        );
        // Batch runs' n are 100,000 and up: the first start's n, apart from the debounced flow's.
        const batched = await flowOf(
          "batched",
          { batch: { max_items: 5, timeout_s: 2, key: "{{trigger.k}}" } },
          hitUrl("{{100000 + trigger[0].n}}"),
        );

        // Worker A alone takes the first wave: the runs held at the upstream when it dies are its own.
        const workerA = platform.worker("worker A");
        const accepted = new Map<string, Map<string, number>>([
          [debounced, new Map()],
          [batched, new Map()],
        ]);
        const wave = async (from: number) => {
          for (let start = from; start < from + WAVE; start += 20) {
            const ns = Array.from({ length: 20 }, (_, i) => start + i);
            await Promise.all(
              ns.flatMap((n) =>
                [debounced, batched].map(async (flowId) => {
                  const answer = await platform.request("POST", `/flows/${flowId}/runs`, { n, k: n % KEYS }, token);
                  expect(answer.status).toBe(200);
                  accepted.get(flowId)?.set(answer.body.run_id as string, n);
                }),
              ),
            );
          }
        };
        await wave(0);
        // Runs hold requests open at the upstream while others still wait: worker A dies among them.
        await platform.until("runs to reach the upstream", () => (upstream.held >= KEYS ? true : undefined), WAIT_MS);
        platform.worker("worker B");
        platform.worker("worker C");
        await platform.kill(workerA);
        upstream.open();
        await wave(WAVE);

        const runsOf = (flowId: string, count: number) =>
          platform.until(
            `every run of ${flowId} to end`,
            async () => {
              const rows = await platform.database.db
                .selectFrom("runs")
                .select(["id", "status", "trigger", "taken_by", "end_reason", stepRecordsColumn])
                .where("flow_id", "=", flowId)
                .execute();
              return rows.length === count && rows.every((row) => FINAL.has(row.status)) ? rows : undefined;
            },
            WAIT_MS,
          );
        const interrupted = (run: { steps: Record<string, { attempts: { error?: string }[] }> | null }) =>
          (run.steps?.notify?.attempts ?? []).filter((attempt) => attempt.error?.startsWith("interrupted")).length;

        // Debounce: each start ran, or was skipped for a run that ran; each key's last start ran.
        const debouncedRuns = await runsOf(debounced, 2 * WAVE);
        expect(debouncedRuns.map((run) => run.id).sort()).toEqual([...(accepted.get(debounced)?.keys() ?? [])].sort());
        const ranIds = new Set(debouncedRuns.filter((run) => run.status === "succeeded").map((run) => run.id));
        for (const run of debouncedRuns) {
          if (run.status === "succeeded") continue;
          expect(run).toMatchObject({ status: "skipped", end_reason: "replaced by a later start under the debounce" });
          expect(ranIds.has(run.taken_by as string)).toBe(true);
        }
        for (let k = 0; k < KEYS; k++) {
          const last = debouncedRuns.find((run) => (run.trigger as { n: number }).n === 2 * WAVE - KEYS + k);
          expect(last?.status).toBe("succeeded");
        }
        for (const run of debouncedRuns.filter((one) => one.status === "succeeded")) {
          const seen = upstream.hits.get((run.trigger as { n: number }).n) ?? 0;
          expect(seen).toBeGreaterThanOrEqual(1);
          expect(seen).toBeLessThanOrEqual(1 + interrupted(run));
        }
        for (const run of debouncedRuns.filter((one) => one.status === "skipped")) {
          expect(upstream.hits.get((run.trigger as { n: number }).n)).toBeUndefined();
        }

        // Batch: every start's data is in exactly one batch run that ran; the others joined it.
        const batchedRuns = await runsOf(batched, 2 * WAVE);
        expect(batchedRuns.map((run) => run.id).sort()).toEqual([...(accepted.get(batched)?.keys() ?? [])].sort());
        const ran = batchedRuns.filter((run) => run.status !== "batched");
        expect(ran.filter((run) => run.status !== "succeeded")).toEqual([]);
        const items = ran.flatMap((run) => (run.trigger as { n: number; k: number }[]).map((item) => item.n));
        expect(items.sort((a, b) => a - b)).toEqual(Array.from({ length: 2 * WAVE }, (_, n) => n));
        for (const run of ran) {
          const list = run.trigger as { n: number; k: number }[];
          expect(list.length).toBeLessThanOrEqual(5);
          expect(new Set(list.map((item) => item.k)).size).toBe(1);
          const seen = upstream.hits.get(100_000 + (list[0] as { n: number }).n) ?? 0;
          expect(seen).toBeGreaterThanOrEqual(1);
          expect(seen).toBeLessThanOrEqual(1 + interrupted(run));
        }
        // The kill caught runs at their step: taken over, their attempt is on record as interrupted.
        expect([...debouncedRuns, ...ran].some((run) => interrupted(run) > 0)).toBe(true);
        const holders = new Set(ran.map((run) => run.id));
        for (const run of batchedRuns.filter((one) => one.status === "batched")) {
          expect(holders.has(run.taken_by as string)).toBe(true);
          expect(run.end_reason).toBe(`joined batch run ${run.taken_by}`);
        }
      }, 300_000);
    },
  );
}
