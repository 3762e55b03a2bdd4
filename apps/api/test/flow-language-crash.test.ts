import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { testEnv } from "@platform/db/testing";
import type { Server } from "bun";
import { endedRuns, PlatformProcesses, redisDeployments } from "./process-helpers.ts";

/**
 * A for-each survives a killed worker (scale-out: an API and two workers on PostgreSQL and
 * Redis). 200 runs of a flow whose for-each walks 50 items, 5 at a time, each item writing
 * a KV key and calling an upstream. Worker A is SIGKILLed once a third of the items are done;
 * worker B takes its runs over. Every run ends `succeeded`, once; every item's key is
 * written, and written again only where the kill interrupted that very write (the bucket's
 * revision counts every write); finished items are not run again.
 */
const RUNS = 200;
const ITEMS = 50;
const WAIT_MS = 240_000;

for (const deployment of redisDeployments()) {
  const skip = testEnv.DATABASE_URL ? deployment.skipShared : "DATABASE_URL is not set";
  describe.skipIf(Boolean(skip))(
    `a worker killed in the middle of for-each items on ${deployment.label}${skip ? ` (skipped: ${skip})` : ""}`,
    () => {
      let upstream: Server<undefined>;
      /** Calls per `<run>-<item>`. */
      const hits = new Map<string, number>();
      let platform: PlatformProcesses;

      beforeAll(async () => {
        upstream = Bun.serve({
          port: 0,
          hostname: "127.0.0.1",
          async fetch(request) {
            const key = new URL(request.url).pathname.split("/").at(-1) ?? "";
            hits.set(key, (hits.get(key) ?? 0) + 1);
            await Bun.sleep(5);
            return Response.json({ key });
          },
        });
        // One member per worker holds at most 64 runs: both workers hold some of the 200.
        platform = await PlatformProcesses.start({
          redisUrl: await deployment.shared(),
          env: { WORKER_CONCURRENCY: "1", ...deployment.env },
        });
      }, 120_000);

      afterAll(async () => {
        await platform?.stop();
        upstream?.stop(true);
      });

      test("every run succeeds once; each item's write happens once but where the kill interrupted it", async () => {
        const token = await platform.signUp("foreach-crash");
        expect(
          (await platform.request("PUT", "/storage/kv/items", { description: "one key per item" }, token)).status,
        ).toBe(200);
        const flow = await platform.request(
          "POST",
          "/flows",
          {
            name: "for-each crash test",
            steps: [
              {
                name: "each",
                for_each: "{{trigger.items}}",
                concurrency: 5,
                steps: [
                  {
                    name: "save",
                    subject: "kv.put",
                    payload: { bucket: "items", key: "r{{trigger.n}}-{{index}}", value: "{{item}}" },
                  },
                  {
                    name: "call",
                    subject: "http.request",
                    payload: { url: `http://127.0.0.1:${upstream.port}/hit/r{{trigger.n}}-{{index}}` },
                  },
                ],
              },
            ],
          },
          token,
        );
        expect(flow.status).toBe(200);
        const flowId = (flow.body.data as { id: string }).id;

        const workerA = platform.worker("worker A");
        platform.worker("worker B");
        const items = Array.from({ length: ITEMS }, (_, index) => index * 10);
        for (let from = 0; from < RUNS; from += 25) {
          const batch = Array.from({ length: Math.min(25, RUNS - from) }, (_, i) => from + i);
          const started = await Promise.all(
            batch.map((n) => platform.request("POST", `/flows/${flowId}/runs`, { n, items }, token)),
          );
          for (const answer of started) expect(answer.status).toBe(200);
        }

        const total = RUNS * ITEMS;
        const called = () => [...hits.values()].reduce((sum, n) => sum + n, 0);
        await platform.until(
          "a third of the items to be done",
          () => (called() >= total / 3 ? true : undefined),
          WAIT_MS,
        );
        await platform.kill(workerA);
        expect(called()).toBeLessThan(total);

        const runs = await endedRuns(platform, flowId, RUNS);
        expect(runs.filter((run) => run.status !== "succeeded").map((run) => run.error)).toEqual([]);

        type Attempt = { error?: string };
        const interrupted = (attempts: Attempt[] = []) =>
          attempts.filter((a) => a.error?.startsWith("interrupted")).length;
        let savesInterrupted = 0;
        let callsInterrupted = 0;
        for (const run of runs) {
          const steps = run.steps ?? {};
          const n = (run.trigger as { n: number }).n;
          expect(steps.each).toMatchObject({ status: "succeeded", items: ITEMS });
          for (let index = 0; index < ITEMS; index++) {
            const save = steps[`save[${index}]`];
            const call = steps[`call[${index}]`];
            expect(save?.attempts.at(-1)?.error).toBeUndefined();
            expect(call?.attempts.at(-1)?.error).toBeUndefined();
            savesInterrupted += interrupted(save?.attempts);
            callsInterrupted += interrupted(call?.attempts);
            const seen = hits.get(`r${n}-${index}`) ?? 0;
            expect(seen).toBeGreaterThanOrEqual(1);
            expect(seen).toBeLessThanOrEqual(1 + interrupted(call?.attempts));
          }
        }
        // The kill caught items in flight, and they were run again, on record.
        expect(savesInterrupted + callsInterrupted).toBeGreaterThan(0);

        // Every key holds its item; the bucket's revision counts every write, so at most one
        // more write than keys per interrupted save.
        const revisions: number[] = [];
        for (let n = 0; n < RUNS; n += 1) {
          const read = await Promise.all(
            Array.from({ length: ITEMS }, (_, index) =>
              fetch(`${platform.api}/storage/kv/items/keys/r${n}-${index}`, {
                headers: { authorization: `Bearer ${token}` },
              }).then(async (r) => (await r.json()) as { value: number; revision: number }),
            ),
          );
          for (const [index, entry] of read.entries()) {
            expect(entry.value).toBe(index * 10);
            revisions.push(entry.revision);
          }
        }
        expect(Math.max(...revisions)).toBeGreaterThanOrEqual(total);
        expect(Math.max(...revisions)).toBeLessThanOrEqual(total + savesInterrupted);
      }, 300_000);
    },
  );
}
