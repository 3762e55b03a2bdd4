import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Server } from "bun";
import { type Caller, call, newCaller, runUntil, startRun } from "./context.ts";
import { runModes, startTestApi, type TestApi } from "./harness.ts";

/**
 * `POST /runs/{id}/cancel`: a waiting or running run ends `cancelled`; a step under way is
 * not interrupted, but its result is discarded and nothing after it runs; idempotent.
 */

// biome-ignore lint/suspicious/noExplicitAny: the assertions that read a view are its type check
type View = any;

const stepOf = (run: View, name: string) => run.steps.find((step: View) => step.name === name);

for (const { label, backend, redis, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(`cancelling runs on ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;
    let owner: Caller;
    let upstream: Server<undefined>;
    /** Requests to the upstream, by path; `/slow` waits until `release` is called. */
    const hits: string[] = [];
    let release!: () => void;
    let released = new Promise<void>((resolve) => {
      release = resolve;
    });

    beforeAll(async () => {
      upstream = Bun.serve({
        port: 0,
        hostname: "127.0.0.1",
        async fetch(request) {
          const path = new URL(request.url).pathname;
          hits.push(path);
          if (path === "/slow") await released;
          return Response.json({ path });
        },
      });
      api = await startTestApi({
        backend,
        redis,
        worker: true,
        env: { HTTP_REQUEST_ALLOWED_NETWORKS: "127.0.0.1", WAIT_TIMEOUT_MS: "20000" },
      });
      owner = await newCaller(api, "cancel");
    }, 60_000);
    afterAll(async () => {
      release();
      await api.stop();
      upstream.stop(true);
    });

    async function flowOf(steps: unknown[]): Promise<string> {
      const created = await call(api, owner, "POST", "/flows", { name: "cancel", steps });
      if (created.status !== 200) throw new Error(`POST /flows: ${created.status} ${JSON.stringify(created.body)}`);
      return created.body.data.id;
    }

    const after = { name: "after", subject: "transform", payload: { ran: true } };

    test("a run parked on a delay ends cancelled at once; nothing after the delay runs; cancelling again changes nothing", async () => {
      const flowId = await flowOf([{ name: "pause", subject: "delay", payload: { ms: 60_000 } }, after]);
      const runId = (await startRun(api, owner, flowId, {})).body.run_id;
      await runUntil(api, owner, runId, (run) => stepOf(run, "pause")?.status === "waiting");
      const cancelled = await call(api, owner, "POST", `/runs/${runId}/cancel`);
      expect(cancelled.status).toBe(200);
      expect(cancelled.body).toMatchObject({ id: runId, status: "cancelled", error: "cancelled" });
      expect(cancelled.body.finished_at).not.toBeNull();
      const again = await call(api, owner, "POST", `/runs/${runId}/cancel`);
      expect(again.body).toMatchObject({ status: "cancelled", finished_at: cancelled.body.finished_at });
      await Bun.sleep(1500);
      const later = (await call(api, owner, "GET", `/runs/${runId}`)).body;
      expect(later.status).toBe("cancelled");
      expect(stepOf(later, "after")).toBeUndefined();
      const listed = await call(api, owner, "GET", `/flows/${flowId}/runs?status=cancelled`);
      expect(listed.body.data.map((run: View) => run.id)).toEqual([runId]);
    });

    test("a run waiting for an event is cancelled; the event then resumes nothing", async () => {
      const flowId = await flowOf([{ name: "ask", subject: "wait.event", payload: { key: "cancel-me" } }, after]);
      const runId = (await startRun(api, owner, flowId, {})).body.run_id;
      await runUntil(api, owner, runId, (run) => stepOf(run, "ask")?.status === "waiting");
      expect((await call(api, owner, "POST", `/runs/${runId}/cancel`)).body.status).toBe("cancelled");
      expect((await call(api, owner, "POST", "/events", { key: "cancel-me" })).body).toEqual({ data: { resumed: 0 } });
    });

    test("a step under way finishes, but its result is discarded and no further step starts", async () => {
      released = new Promise<void>((resolve) => {
        release = resolve;
      });
      const flowId = await flowOf([
        { name: "slow", subject: "http.request", payload: { url: `http://127.0.0.1:${upstream.port}/slow` } },
        { name: "next", subject: "http.request", payload: { url: `http://127.0.0.1:${upstream.port}/next` } },
      ]);
      const runId = (await startRun(api, owner, flowId, {})).body.run_id;
      while (!hits.includes("/slow")) await Bun.sleep(20);
      expect((await call(api, owner, "POST", `/runs/${runId}/cancel`)).body.status).toBe("cancelled");
      release();
      await Bun.sleep(1500);
      const run = (await call(api, owner, "GET", `/runs/${runId}`)).body;
      expect(run.status).toBe("cancelled");
      expect(stepOf(run, "slow")?.status).not.toBe("succeeded");
      expect(hits).not.toContain("/next");
    });

    test("a run that has ended is answered as it is; another account's run is 404", async () => {
      const flowId = await flowOf([after]);
      const run = await runUntil(api, owner, (await startRun(api, owner, flowId, {})).body.run_id);
      const answer = await call(api, owner, "POST", `/runs/${run.id}/cancel`);
      expect(answer.body).toMatchObject({ status: "succeeded", output: { ran: true } });
      const stranger = await newCaller(api, "stranger");
      expect(await call(api, stranger, "POST", `/runs/${run.id}/cancel`)).toMatchObject({
        status: 404,
        body: { error: "run not found" },
      });
    });

    test("an API key that does not name cancel or events is refused them (403); bad ids are 400", async () => {
      const created = await call(api, owner, "POST", "/accounts/api-keys", {
        name: "reader",
        allowed_paths: ["GET /runs/*", "GET /flows/*"],
      });
      const reader = { headers: { "x-api-key": created.body.data.key as string } };
      const flowId = await flowOf([after]);
      const run = await runUntil(api, owner, (await startRun(api, owner, flowId, {})).body.run_id);
      expect((await call(api, reader, "GET", `/runs/${run.id}`)).status).toBe(200);
      expect((await call(api, reader, "POST", `/runs/${run.id}/cancel`)).status).toBe(403);
      expect((await call(api, reader, "POST", "/events", { key: "k" })).status).toBe(403);
      expect(await call(api, owner, "POST", "/runs/not-a-uuid/cancel")).toMatchObject({
        status: 400,
        body: { error: "invalid input: id: must be a UUID" },
      });
    });

    test("a wait-mode request for a cancelled run answers 500 cancelled at once", async () => {
      const flowId = await flowOf([{ name: "pause", subject: "delay", payload: { ms: 60_000 } }, after]);
      const waiting = api.request(`/flows/${flowId}/runs?wait=true`, {
        method: "POST",
        headers: { ...owner.headers, "content-type": "application/json" },
        body: "{}",
      });
      let runId: string | undefined;
      while (!runId) {
        const listed = await call(api, owner, "GET", `/flows/${flowId}/runs`);
        runId = listed.body.data[0]?.id;
        if (!runId) await Bun.sleep(20);
      }
      await runUntil(api, owner, runId, (run) => stepOf(run, "pause")?.status === "waiting");
      await call(api, owner, "POST", `/runs/${runId}/cancel`);
      const answer = await waiting;
      expect(answer.status).toBe(500);
      expect(await answer.json()).toEqual({ error: "cancelled", run_id: runId });
    });

    test("a cancelled flow.call fails the calling step, which its catch can handle", async () => {
      const child = await flowOf([{ name: "pause", subject: "delay", payload: { ms: 60_000 } }]);
      const parent = await flowOf([
        {
          name: "call",
          subject: "flow.call",
          payload: { flow_id: child },
          catch: [{ name: "handled", subject: "transform", payload: { why: "{{error.message}}" } }],
        },
      ]);
      const runId = (await startRun(api, owner, parent, {})).body.run_id;
      const waiting = await runUntil(api, owner, runId, (run) => Boolean(stepOf(run, "call")?.child_run_id));
      const childId = stepOf(waiting, "call").child_run_id;
      await runUntil(api, owner, childId, (run) => stepOf(run, "pause")?.status === "waiting");
      expect((await call(api, owner, "POST", `/runs/${childId}/cancel`)).body.status).toBe("cancelled");
      const ended = await runUntil(api, owner, runId);
      expect(ended).toMatchObject({
        status: "succeeded",
        output: { why: `the called run ${childId} failed: cancelled` },
      });
    });
  });
}
