import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eventually } from "@platform/core/testing";
import type { Server } from "bun";
import { type Caller, call, newCaller, runUntil, startRun } from "./context.ts";
import { runModes, startTestApi, type TestApi } from "./harness.ts";

/**
 * Per-flow singletons (issue 31): one run of a key is queued or running at a time. In `skip`
 * mode a start that finds one ends `skipped`, naming it; in `cancel` mode it cancels that run
 * (stopped as `POST /runs/{id}/cancel` stops one: its step's result is discarded) and runs.
 * The upstream each run calls holds its request until the test lets it go, so a run is still
 * running when the next start of its key comes, however fast this machine is.
 */
const ended = (run: { status: string }) => run.status !== "queued" && run.status !== "running";

for (const { label, backend, redis, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(`singletons on ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;
    let owner: Caller;
    let upstream: Server<undefined>;
    /** The runs whose request the upstream holds, by run id. */
    const held = new Map<string, () => void>();

    beforeAll(async () => {
      upstream = Bun.serve({
        port: 0,
        hostname: "127.0.0.1",
        idleTimeout: 0,
        async fetch(request) {
          const runId = new URL(request.url).pathname.split("/").at(-1) ?? "";
          const { promise, resolve } = Promise.withResolvers<void>();
          held.set(runId, resolve);
          await promise;
          return Response.json({ runId });
        },
      });
      api = await startTestApi({ backend, redis, worker: true, env: { HTTP_REQUEST_ALLOWED_NETWORKS: "127.0.0.1" } });
      owner = await newCaller(api, "singleton");
    }, 60_000);
    afterAll(async () => {
      for (const release of held.values()) release();
      await api.stop();
      upstream.stop(true);
    });

    const singletonFlow = async (mode: "skip" | "cancel") => {
      const created = await call(api, owner, "POST", "/flows", {
        name: `singleton ${mode}`,
        singleton: { key: "{{trigger.customer}}", mode },
        steps: [
          {
            name: "call",
            subject: "http.request",
            payload: { url: `http://127.0.0.1:${upstream.port}/customer/{{trigger.customer}}/{{run.id}}` },
          },
        ],
      });
      expect(created.status).toBe(200);
      expect(created.body.data.singleton).toEqual({ key: "{{trigger.customer}}", mode });
      return created.body.data.id as string;
    };
    /** Starts a run and waits until its request reaches the upstream. */
    const startHeld = async (flowId: string, customer: string) => {
      const started = await startRun(api, owner, flowId, { customer });
      expect(started.status).toBe(200);
      const id = started.body.run_id as string;
      await eventually(() => held.has(id), 30_000);
      return id;
    };

    test("skip: a start of a key whose run is under way is skipped, naming it; other keys and later starts run", async () => {
      const flowId = await singletonFlow("skip");
      const first = await startHeld(flowId, "a");
      const repeated = await startRun(api, owner, flowId, { customer: "a" });
      expect(repeated.status).toBe(200);
      const skipped = await runUntil(api, owner, repeated.body.run_id, ended);
      expect(skipped).toMatchObject({
        status: "skipped",
        end_reason: `singleton: run ${first} of key "a" is queued or running`,
        steps: [],
      });
      // Another key has a run of its own meanwhile.
      const other = await startHeld(flowId, "b");
      for (const id of [first, other]) held.get(id)?.();
      expect((await runUntil(api, owner, first)).status).toBe("succeeded");
      expect((await runUntil(api, owner, other)).status).toBe("succeeded");
      // Once the key's run has ended, a start of the key runs again.
      const later = await startHeld(flowId, "a");
      held.get(later)?.();
      expect((await runUntil(api, owner, later)).status).toBe("succeeded");
    }, 60_000);

    test("cancel: a start of a key cancels its run under way, which names the start that replaced it", async () => {
      const flowId = await singletonFlow("cancel");
      const first = await startHeld(flowId, "a");
      const replacing = await startHeld(flowId, "a");
      const cancelled = await runUntil(api, owner, first, ended);
      expect(cancelled).toMatchObject({
        status: "cancelled",
        end_reason: `replaced by run ${replacing}, a later start of key "a" (singleton)`,
        taken_by: replacing,
      });
      // The cancelled run's step result is discarded when its request returns; the new run goes on.
      held.get(first)?.();
      held.get(replacing)?.();
      expect((await runUntil(api, owner, replacing)).status).toBe("succeeded");
      expect(await runUntil(api, owner, first, ended)).toMatchObject({ status: "cancelled", output: null });
    }, 60_000);

    test("a singleton is shown on the flow; a bad one is a 400 naming it", async () => {
      const definition = { name: "later", steps: [{ name: "s", subject: "transform", payload: {} }] };
      const created = await call(api, owner, "POST", "/flows", { ...definition, singleton: { mode: "skip" } });
      expect(created.body.data.singleton).toEqual({ mode: "skip" });
      const read = await call(api, owner, "GET", `/flows/${created.body.data.id}`);
      expect(read.body.data.singleton).toEqual({ mode: "skip" });
      const bad = await call(api, owner, "POST", "/flows", { ...definition, singleton: { mode: "later" } });
      expect(bad).toMatchObject({
        status: 400,
        body: { error: 'invalid input: singleton.mode: must be "skip" or "cancel"' },
      });
      const missing = await call(api, owner, "POST", "/flows", { ...definition, singleton: { key: "{{trigger.a}}" } });
      expect(missing).toMatchObject({ status: 400, body: { error: expect.stringContaining("singleton.mode") } });
    });
  });
}
