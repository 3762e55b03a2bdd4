import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Broker } from "../broker/port.ts";
import { brokerBackends, eventually, randomScope, type TestBroker } from "../broker/test-backends.ts";
import { createLogger } from "../logger.ts";
import type { PeriodicJob } from "./periodic.ts";
import { startWorkerRuntime, type WorkerRuntime } from "./runtime.ts";

const logger = createLogger({ level: "silent", name: "periodic-test" });

/** The Postgres adapter is the same on both servers; the jobs run on PGlite and Redis. */
const backends = brokerBackends().filter((b) => b.name !== "postgres");

for (const backend of backends) {
  describe.skipIf(Boolean(backend.skip))(
    `periodic jobs on ${backend.name}${backend.skip ? ` (skipped: ${backend.skip})` : ""}`,
    () => {
      let opened: TestBroker;
      let peer: Broker;
      const runtimes: WorkerRuntime[] = [];

      beforeAll(async () => {
        opened = await backend.open();
        peer = await opened.openPeer();
      }, 60_000);
      afterAll(async () => {
        await Promise.all(runtimes.map((r) => r.stop(100)));
        await opened?.close();
      });

      const start = (broker: Broker, jobs: PeriodicJob[]) => {
        const runtime = startWorkerRuntime({ broker, logger, consumers: [], jobs, jobCheckMs: 20 });
        runtimes.push(runtime);
        return runtime;
      };

      test("a job runs once per interval across two processes, soon after they start", async () => {
        const runs: string[] = [];
        const name = randomScope("job");
        const job = (process: string): PeriodicJob => ({
          name,
          everyMs: 600,
          run: async () => {
            runs.push(process);
          },
        });
        const started = Date.now();
        const one = start(opened.broker, [job("one")]);
        const two = start(peer, [job("two")]);
        await eventually(() => runs.length >= 1, 5000);
        await Bun.sleep(1500);
        await Promise.all([one.stop(100), two.stop(100)]);
        const elapsed = Date.now() - started;
        // One run per started 600 ms window, whichever process took it: never two in a window.
        expect(runs.length).toBeGreaterThanOrEqual(2);
        expect(runs.length).toBeLessThanOrEqual(Math.ceil(elapsed / 600));
      });

      test("a failing run is logged and the job runs again in the next interval", async () => {
        let calls = 0;
        const runtime = start(opened.broker, [
          {
            name: randomScope("job"),
            everyMs: 100,
            run: async () => {
              calls++;
              if (calls === 1) throw new Error("upstream down");
            },
          },
        ]);
        await eventually(() => calls >= 2, 5000);
        await runtime.stop(100);
        expect(calls).toBeGreaterThanOrEqual(2);
      });

      test("stopping the runtime aborts the signal a long run is given, and waits for it", async () => {
        let aborted = false;
        let began = false;
        const runtime = start(opened.broker, [
          {
            name: randomScope("job"),
            everyMs: 60_000,
            run: async ({ signal }) => {
              began = true;
              await new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve()));
              aborted = true;
            },
          },
        ]);
        await eventually(() => began, 5000);
        await runtime.stop(2000);
        expect(aborted).toBe(true);
      });
    },
  );
}
