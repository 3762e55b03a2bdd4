import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Server } from "bun";
import { type Caller, call, createFlow, newCaller, runUntil, startRun } from "./context.ts";
import { runModes, startTestApi, type TestApi } from "./harness.ts";

/**
 * `http.request` and `js` steps in real runs: a local HTTP server stands in for the outside
 * world (reachable because 127.0.0.1 is listed in HTTP_REQUEST_ALLOWED_NETWORKS), and the
 * QuickJS sandbox runs on its worker threads.
 */
for (const { label, backend, redis, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(`http.request and js steps on ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;
    let owner: Caller;
    let upstream: Server<undefined>;
    const hits = new Map<string, number>();
    beforeAll(async () => {
      upstream = Bun.serve({
        port: 0,
        hostname: "127.0.0.1",
        async fetch(request) {
          const url = new URL(request.url);
          const count = (hits.get(url.pathname) ?? 0) + 1;
          hits.set(url.pathname, count);
          if (url.pathname.startsWith("/flaky/") && count <= 2) {
            return new Response("busy, try later", { status: 503 });
          }
          if (url.pathname === "/slow") await Bun.sleep(5000);
          return Response.json({ path: url.pathname, attempt: count, got: await request.text() });
        },
      });
      api = await startTestApi({
        backend,
        redis,
        worker: true,
        env: { HTTP_REQUEST_ALLOWED_NETWORKS: "127.0.0.1", WAIT_TIMEOUT_MS: "20000", JS_TIME_LIMIT_MS: "500" },
      });
      owner = await newCaller(api, "modules");
    }, 60_000);
    afterAll(async () => {
      await api.stop();
      upstream.stop(true);
    });
    const base = () => `http://127.0.0.1:${upstream.port}`;

    test("an http.request that fails twice is retried after its backoff, and succeeds; each attempt is in the run", async () => {
      const path = `/flaky/${crypto.randomUUID()}`;
      const flowId = await createFlow(api, owner, [
        {
          name: "call",
          subject: "http.request",
          payload: { method: "POST", url: `${base()}${path}`, body: { order: "{{trigger.order}}" } },
          options: { attempts: 3, backoff_ms: 200 },
        },
      ]);
      const run = await runUntil(api, owner, (await startRun(api, owner, flowId, { order: 9 })).body.run_id);
      expect(run.status).toBe("succeeded");
      expect(run.output).toMatchObject({ status: 200, body: { path, attempt: 3, got: '{"order":9}' } });
      const attempts = run.steps[0].attempts;
      expect(attempts).toHaveLength(3);
      expect(attempts[0].error).toContain("503");
      expect(attempts[1].error).toContain("503");
      expect(attempts[2].error).toBeUndefined();
      // Backoffs of 100-200 ms, then 200-400 ms.
      expect(Date.parse(attempts[1].started_at) - Date.parse(attempts[0].finished_at)).toBeGreaterThanOrEqual(100);
      expect(Date.parse(attempts[2].started_at) - Date.parse(attempts[1].finished_at)).toBeGreaterThanOrEqual(200);
      expect(hits.get(path)).toBe(3);
    });

    test("an attempt past options.timeout fails with the limit in its error", async () => {
      const flowId = await createFlow(api, owner, [
        { name: "call", subject: "http.request", payload: { url: `${base()}/slow` }, options: { timeout: 300 } },
      ]);
      const run = await runUntil(api, owner, (await startRun(api, owner, flowId, {})).body.run_id);
      expect(run).toMatchObject({ status: "failed", error: 'step "call" failed: timed out after 300 ms' });
    });

    test("http.request refuses loopback, private and metadata addresses in a run, at once and without retrying", async () => {
      for (const url of ["http://127.0.0.2/", "http://10.0.0.1/", "http://169.254.169.254/latest/meta-data/"]) {
        const flowId = await createFlow(api, owner, [
          { name: "call", subject: "http.request", payload: { url }, options: { attempts: 3, backoff_ms: 10 } },
        ]);
        const run = await runUntil(api, owner, (await startRun(api, owner, flowId, {})).body.run_id);
        expect(run.status).toBe("failed");
        expect(run.steps[0].attempts).toHaveLength(1);
        expect(run.error).toContain(new URL(url).hostname);
      }
    });

    test("a js step computes from the trigger and earlier steps; a runaway one fails at its limit while other runs go on", async () => {
      const flowId = await createFlow(api, owner, [
        { name: "first", subject: "transform", payload: { n: "{{trigger.n}}" } },
        {
          name: "sum",
          subject: "js",
          payload: {
            code: "export default async ({ trigger, steps }) => ({ total: trigger.n + steps.first.n, host: typeof process })",
          },
        },
      ]);
      const runaway = await createFlow(api, owner, [
        { name: "spin", subject: "js", payload: { code: "export default () => { while (true) {} }" } },
      ]);
      const spinning = (await startRun(api, owner, runaway, {})).body.run_id;
      const summed = await runUntil(api, owner, (await startRun(api, owner, flowId, { n: 20 })).body.run_id);
      expect(summed).toMatchObject({ status: "succeeded", output: { total: 40, host: "undefined" } });
      const stopped = await runUntil(api, owner, spinning);
      expect(stopped.status).toBe("failed");
      expect(stopped.error).toContain("time limit");
    });

    test("a flow with every built-in runs them in order and answers wait mode with its respond step", async () => {
      expect((await call(api, owner, "PUT", "/storage/kv/everything", {})).status).toBe(200);
      expect((await call(api, owner, "PUT", "/storage/streams/everything", {})).status).toBe(200);
      const flowId = await createFlow(api, owner, [
        { name: "shape", subject: "transform", payload: { id: "{{trigger.id}}" } },
        {
          name: "save",
          subject: "kv.put",
          payload: { bucket: "everything", key: "k{{steps.shape.id}}", value: "{{trigger}}" },
        },
        { name: "load", subject: "kv.get", payload: { bucket: "everything", key: "k{{steps.shape.id}}" } },
        { name: "pause", subject: "delay", payload: { ms: 10 } },
        { name: "fetch", subject: "http.request", payload: { url: `${base()}/echo/{{steps.shape.id}}` } },
        {
          name: "count",
          subject: "js",
          payload: { code: "export default ({ steps }) => steps.fetch.body.path.length + steps.load.value.id" },
        },
        {
          name: "announce",
          subject: "stream.publish",
          payload: { stream: "everything", subject: "done", body: { count: "{{steps.count}}" } },
        },
        {
          name: "reply",
          subject: "respond",
          payload: { status: 202, headers: { "x-seq": "{{steps.announce.seq}}" }, body: { count: "{{steps.count}}" } },
        },
      ]);
      const response = await api.request(`/flows/${flowId}/runs?wait=true`, {
        method: "POST",
        headers: owner.headers,
        json: { id: 5 },
      });
      const answer = await response.clone().text();
      expect({ status: response.status, answer }).toEqual({ status: 202, answer: '{"count":12}' });
      expect(response.headers.get("x-seq")).toBe("1");
      // "/echo/5" is 7 characters, plus the id.
      expect(await response.json()).toEqual({ count: 12 });
      const runs = await call(api, owner, "GET", `/flows/${flowId}/runs`);
      const run = await runUntil(api, owner, runs.body.data[0].id);
      expect(run.steps.map((step: { name: string; status: string }) => `${step.name}:${step.status}`)).toEqual([
        "shape:succeeded",
        "save:succeeded",
        "load:succeeded",
        "pause:succeeded",
        "fetch:succeeded",
        "count:succeeded",
        "announce:succeeded",
        "reply:succeeded",
      ]);
    });
  });
}
