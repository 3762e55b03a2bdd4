import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Server } from "bun";
import { type Caller, call, createFlow, newCaller, runUntil, startRun } from "./context.ts";
import { runModes, startTestApi, type TestApi } from "./harness.ts";

/**
 * What a step did besides its output, on GET /runs/{id}: a `js` step's console lines and an
 * `http.request`'s call, kept with each attempt, redacted of the run's secrets and bounded.
 */

const bytes = (lines: { message: string }[]) => lines.reduce((sum, line) => sum + Buffer.byteLength(line.message), 0);

for (const { label, backend, redis, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(`logs from inside steps on ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;
    let owner: Caller;
    let upstream: Server<undefined>;
    let flaky = 0;
    beforeAll(async () => {
      upstream = Bun.serve({
        port: 0,
        hostname: "127.0.0.1",
        async fetch(request) {
          const url = new URL(request.url);
          const sent = await request.text();
          if (url.pathname === "/flaky" && ++flaky === 1) return new Response("busy", { status: 503 });
          return Response.json({ got: sent.length, pad: "x".repeat(100) });
        },
      });
      api = await startTestApi({
        backend,
        redis,
        worker: true,
        // a loop of 10,000 console lines takes a few hundred ms on a busy machine: room for it
        env: { HTTP_REQUEST_ALLOWED_NETWORKS: "127.0.0.1", RUN_LOG_MAX_BYTES: "24576", JS_TIME_LIMIT_MS: "5000" },
      });
      owner = await newCaller(api, "steplogs");
      expect((await call(api, owner, "PUT", "/secrets/api-token", { value: "tok_9f8e7d6c5b" })).status).toBe(200);
    }, 60_000);
    afterAll(async () => {
      await api.stop();
      upstream.stop(true);
    });

    test("a js step that logs and then throws shows its lines and its error; a secret it prints is redacted", async () => {
      const flowId = await createFlow(api, owner, [
        {
          name: "check",
          subject: "js",
          payload: {
            code: `export default ({ trigger }) => {
              const token = "{{secrets.api-token}}";
              console.log("checking order", trigger.order, { items: trigger.items });
              console.warn("using token", token);
              console.error(new RangeError("total is negative"));
              throw new Error("order " + trigger.order.id + " is invalid");
            }`,
          },
        },
      ]);
      const trigger = { order: { id: 42 }, items: [1, 2] };
      const run = await runUntil(api, owner, (await startRun(api, owner, flowId, trigger)).body.run_id);
      expect(run.status).toBe("failed");
      const [step] = run.steps;
      expect(step.error).toBe("js: Error: order 42 is invalid");
      expect(step.attempts).toHaveLength(1);
      const [attempt] = step.attempts;
      expect(attempt.error).toBe("js: Error: order 42 is invalid");
      expect(attempt.logs.map(({ level, message }: { level: string; message: string }) => [level, message])).toEqual([
        ["log", 'checking order {"id":42} {"items":[1,2]}'],
        ["warn", "using token [secret:api-token]"],
        ["error", "RangeError: total is negative"],
      ]);
      for (const line of attempt.logs) {
        expect(Date.parse(line.at)).toBeGreaterThanOrEqual(Date.parse(attempt.started_at));
        expect(Date.parse(line.at)).toBeLessThanOrEqual(Date.parse(attempt.finished_at));
      }
      expect(JSON.stringify(run)).not.toContain("tok_9f8e7d6c5b");
    });

    test("a step that logs 10,000 lines keeps the bounded set and the run ends normally; the run's bound holds across steps", async () => {
      const loud = (name: string) => ({
        name,
        subject: "js",
        payload: {
          code: "export default () => { for (let i = 0; i < 10000; i++) console.log('line ' + i + ' ' + 'y'.repeat(250)); return 'done' }",
        },
      });
      const flowId = await createFlow(api, owner, [loud("first"), loud("second"), loud("third")]);
      const run = await runUntil(api, owner, (await startRun(api, owner, flowId, {})).body.run_id);
      expect([run.status, run.error]).toEqual(["succeeded", null]);
      expect(run.output).toBe("done");
      const logs = run.steps.map((step: { attempts: { logs: { level: string; message: string }[] }[] }) => {
        expect(step.attempts).toHaveLength(1);
        return step.attempts[0]?.logs ?? [];
      });
      // each attempt: at most 100 lines and 16 KiB, then one line saying how many were dropped
      for (const lines of logs) {
        const kept = lines.slice(0, -1);
        expect(kept.length).toBeLessThanOrEqual(100);
        expect(bytes(kept)).toBeLessThanOrEqual(16 * 1024);
        expect(lines.at(-1)?.level).toBe("warn");
        expect(lines.at(-1)?.message).toMatch(/^… [\d,]+ more lines dropped/);
      }
      expect(logs[0]?.[0]?.message).toStartWith("line 0 yyy");
      // the first attempt is bounded by its own 16 KiB (before its 100 lines): its last line is cut with the marker
      expect(bytes(logs[0]?.slice(0, -1) ?? [])).toBeGreaterThan(16 * 1024 - 300);
      expect(logs[0]?.at(-2)?.message).toEndWith("… [truncated]");
      // the run keeps 24 KiB in all (RUN_LOG_MAX_BYTES here): the third step keeps none
      expect(bytes(logs.flatMap((lines: { message: string }[]) => lines.slice(0, -1)))).toBeLessThanOrEqual(24576);
      expect(logs[2]).toHaveLength(1);
      expect(logs[2]?.[0]?.message).toStartWith("… 10,000 more lines dropped");
    });

    test("an http.request records each attempt's call: method, URL with its secret redacted, status, duration and sizes", async () => {
      const body = { note: "hello" };
      const flowId = await createFlow(api, owner, [
        {
          name: "call",
          subject: "http.request",
          payload: {
            method: "POST",
            url: `http://127.0.0.1:${upstream.port}/flaky?key={{secrets.api-token}}`,
            body,
          },
          options: { attempts: 2, backoff_ms: 10 },
        },
      ]);
      const run = await runUntil(api, owner, (await startRun(api, owner, flowId, {})).body.run_id);
      expect(run.status).toBe("succeeded");
      const [failed, succeeded] = run.steps[0].attempts;
      const url = `http://127.0.0.1:${upstream.port}/flaky?key=[secret:api-token]`;
      const sent = JSON.stringify(body).length;
      expect(failed.http).toEqual({
        method: "POST",
        url,
        status: 503,
        duration_ms: expect.any(Number),
        request_bytes: sent,
        response_bytes: "busy".length,
      });
      const answer = JSON.stringify({ got: sent, pad: "x".repeat(100) }).length;
      expect(succeeded.http).toEqual({
        method: "POST",
        url,
        status: 200,
        duration_ms: expect.any(Number),
        request_bytes: sent,
        response_bytes: answer,
      });
      expect(failed.error).toContain("answered 503");
      expect(JSON.stringify(run)).not.toContain("tok_9f8e7d6c5b");
    });

    test("an http.request that gets no answer records its call with a null status", async () => {
      const closed = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("") });
      const port = closed.port;
      closed.stop(true);
      const flowId = await createFlow(api, owner, [
        { name: "call", subject: "http.request", payload: { url: `http://127.0.0.1:${port}/gone` } },
      ]);
      const run = await runUntil(api, owner, (await startRun(api, owner, flowId, {})).body.run_id);
      expect(run.status).toBe("failed");
      expect(run.steps[0].attempts[0].http).toMatchObject({
        method: "GET",
        url: `http://127.0.0.1:${port}/gone`,
        status: null,
        response_bytes: null,
      });
    });

    test("retries keep each attempt's lines with that attempt", async () => {
      const flowId = await createFlow(api, owner, [
        {
          name: "flaky",
          subject: "js",
          payload: {
            code: "export default () => { const roll = Math.random(); console.log('roll', roll); throw new Error('rolled ' + roll) }",
          },
          options: { attempts: 3, backoff_ms: 10 },
        },
      ]);
      const run = await runUntil(api, owner, (await startRun(api, owner, flowId, {})).body.run_id);
      expect(run.status).toBe("failed");
      const { attempts } = run.steps[0];
      expect(attempts).toHaveLength(3);
      for (const attempt of attempts) {
        expect(attempt.logs).toHaveLength(1);
        const roll = attempt.logs[0].message.replace("roll ", "");
        // the line of an attempt is the one that attempt wrote: its error names the same roll
        expect(attempt.error).toBe(`js: Error: rolled ${roll}`);
        expect(Date.parse(attempt.logs[0].at)).toBeGreaterThanOrEqual(Date.parse(attempt.started_at));
        expect(Date.parse(attempt.logs[0].at)).toBeLessThanOrEqual(Date.parse(attempt.finished_at));
      }
      expect(new Set(attempts.map((attempt: { error: string }) => attempt.error)).size).toBe(3);
    });

    test("a step that writes nothing has no logs, and the OpenAPI description documents them", async () => {
      const flowId = await createFlow(api, owner, [
        { name: "quiet", subject: "js", payload: { code: "export default () => 1" } },
      ]);
      const run = await runUntil(api, owner, (await startRun(api, owner, flowId, {})).body.run_id);
      expect(run.status).toBe("succeeded");
      expect(run.steps[0].attempts[0]).not.toHaveProperty("logs");
      const spec = await call(api, null, "GET", "/openapi.json");
      const attempt = spec.body.components.schemas.RunStepAttempt;
      expect(Object.keys(attempt.properties)).toEqual(expect.arrayContaining(["logs", "http"]));
      expect(attempt.properties.logs.description).toContain("console.log");
    });
  });
}
