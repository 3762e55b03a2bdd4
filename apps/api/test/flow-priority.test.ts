import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eventually } from "@platform/core/testing";
import type { Server } from "bun";
import { type Caller, call, newCaller, runUntil, startRun } from "./context.ts";
import { runModes, startTestApi, type TestApi } from "./harness.ts";

/**
 * Priority (issue 31): of the runs waiting for a concurrency slot, one whose priority gives
 * more seconds goes first. A flow limited to one run at once calls an upstream that holds
 * every call until the test lets it go: the first run holds the slot, three runs of
 * priority 0 wait, then one of priority 600 (started last) waits too. Once the upstream lets
 * calls go, the high-priority run is the next to call, then the others, oldest first.
 */
for (const { label, backend, redis, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(`priority on ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;
    let owner: Caller;
    let upstream: Server<undefined>;
    /** The runs' names, in the order they called the upstream. */
    const calls: string[] = [];
    const held = Promise.withResolvers<void>();

    beforeAll(async () => {
      upstream = Bun.serve({
        port: 0,
        hostname: "127.0.0.1",
        async fetch(request) {
          calls.push(new URL(request.url).pathname.split("/").at(-1) ?? "");
          await held.promise;
          return Response.json({});
        },
      });
      api = await startTestApi({ backend, redis, worker: true, env: { HTTP_REQUEST_ALLOWED_NETWORKS: "127.0.0.1" } });
      owner = await newCaller(api, "priority");
    }, 60_000);
    afterAll(async () => {
      held.resolve();
      await api.stop();
      upstream.stop(true);
    });

    test("a run of higher priority waiting for a slot starts before older runs of lower priority", async () => {
      const created = await call(api, owner, "POST", "/flows", {
        name: "prioritised",
        concurrency: { limit: 1 },
        priority: { run: "{{trigger.urgent ? 600 : 0}}" },
        steps: [
          {
            name: "call",
            subject: "http.request",
            payload: { url: `http://127.0.0.1:${upstream.port}/run/{{trigger.name}}` },
          },
        ],
      });
      expect(created.status).toBe(200);
      expect(created.body.data.priority).toEqual({ run: "{{trigger.urgent ? 600 : 0}}" });
      const flowId = created.body.data.id;
      const waiting = async (count: number) => {
        const queued = await call(api, owner, "GET", `/flows/${flowId}/runs?status=queued&limit=100`);
        const reasons = (queued.body.data as { queue_reason: string | null }[]).map((run) => run.queue_reason);
        return reasons.filter((reason) => reason === "waiting for concurrency slot").length === count;
      };

      const ids = [(await startRun(api, owner, flowId, { name: "first" })).body.run_id];
      await eventually(() => calls.length === 1, 30_000);
      for (const name of ["low-1", "low-2", "low-3"])
        ids.push((await startRun(api, owner, flowId, { name })).body.run_id);
      await eventually(() => waiting(3), 30_000);
      ids.push((await startRun(api, owner, flowId, { name: "urgent", urgent: true })).body.run_id);
      await eventually(() => waiting(4), 30_000);

      held.resolve();
      const runs = await Promise.all(ids.map((id) => runUntil(api, owner, id)));
      expect(runs.map((run) => run.status)).toEqual(runs.map(() => "succeeded"));
      expect(calls).toEqual(["first", "urgent", "low-1", "low-2", "low-3"]);
    }, 120_000);

    test("a priority that is not a number fails the run, naming the setting; one past ±600 s counts as the bound", async () => {
      const created = await call(api, owner, "POST", "/flows", {
        name: "bad priority",
        concurrency: { limit: 1 },
        priority: { run: "{{trigger.level}}" },
        steps: [{ name: "echo", subject: "transform", payload: { level: "{{trigger.level}}" } }],
      });
      expect(created.status).toBe(200);
      const flowId = created.body.data.id;
      const high = await runUntil(api, owner, (await startRun(api, owner, flowId, { level: 100_000 })).body.run_id);
      expect(high).toMatchObject({ status: "succeeded", output: { level: 100_000 } });
      const word = await runUntil(api, owner, (await startRun(api, owner, flowId, { level: "high" })).body.run_id);
      expect(word).toMatchObject({
        status: "failed",
        error: 'priority.run: must give a number of seconds, not "high"',
      });
    });

    test("a priority without a concurrency limit, or without a template, is a 400 naming it", async () => {
      const steps = [{ name: "s", subject: "transform", payload: {} }];
      const alone = await call(api, owner, "POST", "/flows", { name: "p", priority: { run: "{{1}}" }, steps });
      expect(alone).toMatchObject({
        status: 400,
        body: { error: "invalid input: priority: orders the runs waiting for a concurrency slot: set concurrency too" },
      });
      const plain = await call(api, owner, "POST", "/flows", {
        name: "p",
        concurrency: { limit: 1 },
        priority: { run: "600" },
        steps,
      });
      expect(plain).toMatchObject({
        status: 400,
        body: { error: "invalid input: priority.run: must hold a template: {{ expression }}" },
      });
    });
  });
}
