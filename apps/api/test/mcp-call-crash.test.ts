import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { testEnv } from "@platform/db/testing";
import { planLimitsFile } from "./context.ts";
import { type McpUpstream, startMcpUpstream } from "./mcp-upstream.ts";
import { PlatformProcesses, redisDeployments, stepRecordsColumn } from "./process-helpers.ts";

/**
 * A worker killed during `mcp.call` steps, on real processes: an API and two workers in
 * scale-out mode (PostgreSQL and Redis). Each run calls the upstream's `hold` tool once
 * (one attempt allowed), which keeps every call open until the test opens its gate; worker
 * A takes the first half of the runs alone, B starts for the rest; once every run's call is
 * held, worker A is SIGKILLed and the gate opened. Worker B takes A's runs over: every run ends `succeeded`, once, and the upstream
 * saw each run's call once, or once more for the attempt the kill interrupted (on record as
 * such) — never more than the retry policy and the crash account for.
 */
const RUNS = 60;
/** A bound on each wait (a hang, not a timed assertion), within the test's own timeout. */
const WAIT_MS = 240_000;

for (const deployment of redisDeployments()) {
  const skip = testEnv.DATABASE_URL ? deployment.skipShared : "DATABASE_URL is not set";
  describe.skipIf(Boolean(skip))(
    `a worker killed during mcp.call steps on ${deployment.label}${skip ? ` (skipped: ${skip})` : ""}`,
    () => {
      let upstream: McpUpstream;
      let platform: PlatformProcesses;

      beforeAll(async () => {
        upstream = startMcpUpstream();
        platform = await PlatformProcesses.start({
          redisUrl: await deployment.shared(),
          // Every run's call is held at once: the plan lets one account have them all in flight.
          env: { ...deployment.env, PLAN_LIMITS_FILE: planLimitsFile({ free: { outbound_requests_in_flight: RUNS } }) },
        });
      }, 120_000);

      afterAll(async () => {
        upstream?.stop();
        await platform?.stop();
      });

      test("every run succeeds once; each tool call is made once, or again only for an attempt the kill interrupted", async () => {
        const token = await platform.signUp("mcp-crash");
        const flow = await platform.request(
          "POST",
          "/flows",
          {
            name: "mcp crash test",
            steps: [
              {
                name: "call",
                subject: "mcp.call",
                payload: { server: upstream.url, tool: "hold", arguments: { n: "{{trigger.n}}" } },
                options: { timeout: 600_000, attempts: 1 },
              },
            ],
          },
          token,
        );
        expect(flow.status).toBe(200);
        const flowId = (flow.body.data as { id: string }).id;

        const runIds: string[] = [];
        const start = async (from: number, to: number) => {
          for (let at = from; at < to; at += 20) {
            const batch = Array.from({ length: Math.min(20, to - at) }, (_, i) => at + i);
            const started = await Promise.all(
              batch.map((n) => platform.request("POST", `/flows/${flowId}/runs`, { n }, token)),
            );
            for (const answer of started) {
              expect(answer.status).toBe(200);
              runIds.push(answer.body.run_id as string);
            }
          }
        };
        const allHeld = (count: number) => () => (upstream.held() === count ? true : undefined);
        // Worker A takes the first half alone, so the kill surely interrupts calls; B then takes the rest.
        const workerA = platform.worker("worker A");
        await start(0, RUNS / 2);
        await platform.until("worker A's calls to be held", allHeld(RUNS / 2), WAIT_MS);
        platform.worker("worker B");
        await start(RUNS / 2, RUNS);
        await platform.until("every run's call to be held", allHeld(RUNS), WAIT_MS);
        await platform.kill(workerA);
        upstream.openGate();

        const runs = await platform.until(
          "every run to end",
          async () => {
            const rows = await platform.database.db
              .selectFrom("runs")
              .select(["id", "status", "error", "trigger", stepRecordsColumn])
              .where("flow_id", "=", flowId)
              .execute();
            return rows.length === RUNS && rows.every((row) => row.status === "succeeded" || row.status === "failed")
              ? rows
              : undefined;
          },
          WAIT_MS,
        );

        // Every accepted run, and nothing else, ran to success.
        expect(runs.map((run) => run.id).sort()).toEqual([...runIds].sort());
        expect(runs.filter((run) => run.status !== "succeeded").map((run) => run.error)).toEqual([]);

        const interrupted = (attempts: { error?: string }[]) =>
          attempts.filter((attempt) => attempt.error?.startsWith("interrupted")).length;
        // The kill caught calls in flight: their open attempt was found and made again.
        const resumed = runs.filter((run) => interrupted(run.steps?.call?.attempts ?? []) > 0);
        expect(resumed.length).toBeGreaterThan(0);

        for (const run of runs) {
          const attempts = run.steps?.call?.attempts ?? [];
          expect(attempts.at(-1)?.error).toBeUndefined();
          // One attempt allowed: the only calls beyond the first are the ones the kill interrupted.
          expect(attempts.length).toBe(1 + interrupted(attempts));
          const seen = upstream.holds.get((run.trigger as { n: number }).n) ?? 0;
          expect(seen).toBeGreaterThanOrEqual(1);
          expect(seen).toBeLessThanOrEqual(1 + interrupted(attempts));
        }
      }, 300_000);
    },
  );
}
