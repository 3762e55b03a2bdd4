import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Server } from "bun";
import { type Caller, call, newCaller, runUntil, startRun } from "./context.ts";
import { runModes, startTestApi, type TestApi } from "./harness.ts";

/**
 * Bulk replay (issue 19): after an outage of the system a flow calls, the failed runs are
 * replayed by a background job, once each, within the flow's concurrency limit; the job
 * shows its progress and can be stopped.
 */
const FAILED = 20;

for (const { label, backend, redis, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(`bulk replay on ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;
    let owner: Caller;
    let upstream: Server<undefined>;
    let down = false;
    let inFlight = 0;
    let most = 0;
    let delayMs = 0;

    beforeAll(async () => {
      upstream = Bun.serve({
        port: 0,
        hostname: "127.0.0.1",
        async fetch() {
          inFlight++;
          most = Math.max(most, inFlight);
          await Bun.sleep(delayMs);
          inFlight--;
          return down ? new Response("outage", { status: 503 }) : Response.json({ ok: true });
        },
      });
      api = await startTestApi({ backend, redis, worker: true, env: { HTTP_REQUEST_ALLOWED_NETWORKS: "127.0.0.1" } });
      owner = await newCaller(api, "bulk-replay");
    }, 60_000);
    afterAll(async () => {
      await api.stop();
      upstream.stop(true);
    });

    async function limitedFlow(name: string, limit: number): Promise<string> {
      const created = await call(api, owner, "POST", "/flows", {
        name,
        concurrency: { limit },
        steps: [{ name: "call", subject: "http.request", payload: { url: `http://127.0.0.1:${upstream.port}/` } }],
      });
      expect(created.status).toBe(200);
      return created.body.data.id;
    }

    async function startAll(flowId: string, count: number): Promise<string[]> {
      const started = await Promise.all(Array.from({ length: count }, (_, n) => startRun(api, owner, flowId, { n })));
      const ids = started.map((answer) => answer.body.run_id as string);
      await Promise.all(ids.map((id) => runUntil(api, owner, id)));
      return ids;
    }

    async function jobUntil(id: string, done: (job: { status: string }) => boolean) {
      for (;;) {
        const read = await call(api, owner, "GET", `/replays/${id}`);
        expect(read.status).toBe(200);
        if (done(read.body.data)) return read.body.data;
        await Bun.sleep(100);
      }
    }

    test("the failed runs are replayed once each, within the concurrency limit, and the job counts them", async () => {
      const flowId = await limitedFlow("outage", 2);
      down = false;
      const fine = await startAll(flowId, 5);
      down = true;
      const failed = await startAll(flowId, FAILED);
      down = false;
      most = 0;
      delayMs = 20;
      const made = await call(api, owner, "POST", `/flows/${flowId}/runs/replay`, { status: "failed" });
      expect(made).toMatchObject({
        status: 200,
        body: {
          data: {
            flow_id: flowId,
            status: "running",
            matched: FAILED,
            filter: { status: "failed", from: null, to: null },
          },
        },
      });
      const job = await jobUntil(made.body.data.id, (read) => read.status !== "running");
      expect(job).toMatchObject({ status: "done", matched: FAILED, started: FAILED, done: FAILED });
      expect(job.finished_at).not.toBeNull();
      expect(most).toBeLessThanOrEqual(2);

      const runs = await call(api, owner, "GET", `/flows/${flowId}/runs?limit=100`);
      const replays = runs.body.data.filter((run: { replay_of: string | null }) => run.replay_of !== null);
      expect(replays.map((run: { replay_of: string }) => run.replay_of).sort()).toEqual([...failed].sort());
      expect(replays.every((run: { status: string }) => run.status === "succeeded")).toBe(true);
      expect(replays.some((run: { replay_of: string }) => fine.includes(run.replay_of))).toBe(false);
    }, 120_000);

    test("a time range matching nothing is done at once; a stopped job starts no more", async () => {
      const flowId = await limitedFlow("slow", 1);
      down = false;
      delayMs = 0;
      await startAll(flowId, 10);
      const none = await call(api, owner, "POST", `/flows/${flowId}/runs/replay`, { to: "2020-01-01T00:00:00Z" });
      expect(none.body.data).toMatchObject({ matched: 0, filter: { to: "2020-01-01T00:00:00.000Z" } });
      expect(await jobUntil(none.body.data.id, (read) => read.status !== "running")).toMatchObject({
        status: "done",
        started: 0,
      });

      delayMs = 300;
      const made = await call(api, owner, "POST", `/flows/${flowId}/runs/replay`, {});
      expect(made.body.data.matched).toBe(10);
      await jobUntil(made.body.data.id, (read) => (read as unknown as { started: number }).started > 0);
      const stopped = await call(api, owner, "DELETE", `/replays/${made.body.data.id}`);
      expect(stopped).toMatchObject({ status: 200, body: { data: { status: "cancelled" } } });
      await Bun.sleep(2500);
      const after = await call(api, owner, "GET", `/replays/${made.body.data.id}`);
      expect(after.body.data.status).toBe("cancelled");
      expect(after.body.data.started).toBe(stopped.body.data.started);
      expect(after.body.data.started).toBeLessThan(10);
      expect(await call(api, owner, "DELETE", `/replays/${made.body.data.id}`)).toMatchObject({
        status: 200,
        body: { data: { status: "cancelled" } },
      });
      delayMs = 0;
    }, 60_000);

    test("another account's job is 404; a key that does not name the operation 403; a bad filter 400 naming it", async () => {
      const flowId = await limitedFlow("mine", 1);
      const made = await call(api, owner, "POST", `/flows/${flowId}/runs/replay`, {});
      const stranger = await newCaller(api, "bulk-replay-stranger");
      expect(await call(api, stranger, "GET", `/replays/${made.body.data.id}`)).toMatchObject({
        status: 404,
        body: { error: "replay not found" },
      });
      expect(await call(api, stranger, "DELETE", `/replays/${made.body.data.id}`)).toMatchObject({ status: 404 });
      expect(await call(api, stranger, "POST", `/flows/${flowId}/runs/replay`, {})).toMatchObject({
        status: 404,
        body: { error: "flow not found" },
      });
      const key = await call(api, owner, "POST", "/accounts/api-keys", {
        name: "reader",
        allowed_paths: ["GET /flows/*", "GET /runs/*"],
      });
      const reader = { headers: { "x-api-key": key.body.data.key as string } };
      expect((await call(api, reader, "GET", `/flows/${flowId}/runs`)).status).toBe(200);
      expect((await call(api, reader, "POST", `/flows/${flowId}/runs/replay`, {})).status).toBe(403);
      expect((await call(api, reader, "GET", `/replays/${made.body.data.id}`)).status).toBe(403);
      expect((await call(api, reader, "DELETE", `/replays/${made.body.data.id}`)).status).toBe(403);
      const bad = await call(api, owner, "POST", `/flows/${flowId}/runs/replay`, {
        status: "bogus",
        from: "yesterday",
      });
      expect(bad.status).toBe(400);
      expect(bad.body.error).toContain("status:");
      expect(bad.body.error).toContain("from: must be an ISO 8601 time");
    });
  });
}
