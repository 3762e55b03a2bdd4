import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { PLATFORM_SCOPE } from "@platform/core";
import { eventually } from "@platform/core/testing";
import { type Caller, call, createFlow, newCaller, runUntil, startRun } from "./context.ts";
import { runModes, startTestApi, type TestApi } from "./harness.ts";

for (const { label, backend, redis, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(`run lifecycle on ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;
    let owner: Caller;
    let stranger: Caller;
    beforeAll(async () => {
      api = await startTestApi({ backend, redis, worker: true, env: { WAIT_TIMEOUT_MS: "5000" } });
      owner = await newCaller(api, "lifecycle");
      stranger = await newCaller(api, "stranger");
    }, 60_000);
    afterAll(() => api.stop());

    test("wait mode answers the respond step's status, headers and body", async () => {
      const flowId = await createFlow(api, owner, [
        { name: "greet", subject: "transform", payload: { text: "hello {{trigger.name}}" } },
        {
          name: "reply",
          subject: "respond",
          payload: { status: 201, headers: { "x-greeting": "yes" }, body: { said: "{{steps.greet.text}}" } },
        },
        { name: "after", subject: "transform", payload: { done: true } },
      ]);
      const response = await api.request(`/flows/${flowId}/runs?wait=true`, {
        method: "POST",
        headers: owner.headers,
        json: { name: "ada" },
      });
      expect(response.status).toBe(201);
      expect(response.headers.get("x-greeting")).toBe("yes");
      expect(response.headers.get("content-type")).toBe("application/json");
      expect(await response.json()).toEqual({ said: "hello ada" });

      const text = await createFlow(api, owner, [
        { name: "reply", subject: "respond", payload: { body: "plain {{trigger.name}}" } },
      ]);
      const plain = await api.request(`/flows/${text}/runs?wait=1`, {
        method: "POST",
        headers: owner.headers,
        json: { name: "text" },
      });
      expect(plain.status).toBe(200);
      expect(plain.headers.get("content-type")).toBe("text/plain; charset=utf-8");
      expect(await plain.text()).toBe("plain text");
    });

    test("wait mode without a respond step answers 200 with the last step's output; a failed run 500", async () => {
      const flowId = await createFlow(api, owner, [
        { name: "shape", subject: "transform", payload: { total: "{{trigger.total}}" } },
      ]);
      const done = await startRun(api, owner, flowId, { total: 12 }, "?wait=true");
      expect(done).toMatchObject({ status: 200, body: { total: 12 } });

      const failing = await createFlow(api, owner, [
        { name: "save", subject: "kv.put", payload: { bucket: "missing", key: "k", value: 1 } },
      ]);
      const failed = await startRun(api, owner, failing, {}, "?wait=true");
      const runId = failed.body.run_id;
      expect(failed.status).toBe(500);
      expect(failed.body).toEqual({ error: 'step "save" failed: bucket not found', run_id: expect.any(String) });
      expect((await runUntil(api, owner, runId)).status).toBe("failed");
      // `wait=false` is acknowledge mode, as is no `wait` at all.
      expect(await startRun(api, owner, flowId, {}, "?wait=false")).toMatchObject({
        status: 200,
        body: { message: "accepted" },
      });
    });

    test("wait mode answers 202 with the run id when the run outlasts WAIT_TIMEOUT_MS; the run goes on", async () => {
      const flowId = await createFlow(api, owner, [{ name: "pause", subject: "delay", payload: { ms: 60_000 } }]);
      const waited = await startRun(api, owner, flowId, {}, "?wait=true");
      expect(waited.status).toBe(202);
      expect(waited.body).toEqual({ run_id: expect.any(String) });
      const run = await runUntil(api, owner, waited.body.run_id, (r) => r.steps[0]?.status === "waiting");
      expect(run.status).toBe("running");
    }, 30_000);

    test("a delay parks the run durably: no worker holds it while it waits, and it goes on when the time comes", async () => {
      const flowId = await createFlow(api, owner, [
        { name: "before", subject: "transform", payload: { n: "{{trigger.n}}" } },
        { name: "pause", subject: "delay", payload: { ms: "{{trigger.wait}}" } },
        { name: "after", subject: "transform", payload: { n: "{{steps.before.n}}", waited: "{{steps.pause.until}}" } },
      ]);
      const runIds: string[] = [];
      for (let n = 0; n < 5; n++) runIds.push((await startRun(api, owner, flowId, { n, wait: 4000 })).body.run_id);
      const waiting = await Promise.all(
        runIds.map((id) => runUntil(api, owner, id, (r) => r.steps[1]?.status === "waiting")),
      );
      for (const run of waiting) {
        expect(run.status).toBe("running");
        expect(run.steps[1]).toMatchObject({ name: "pause", status: "waiting", until: expect.any(String) });
      }
      // Nothing of the run stream stays held meanwhile: each waiting run's entry was acknowledged.
      // Polled with a pause: on PGlite a query resolves without yielding to timers, and a loop
      // of them would starve the worker whose acknowledgement it waits for.
      while ((await api.services.broker.pendingCount(PLATFORM_SCOPE, "runs", "flow-runs")) !== 0) await Bun.sleep(25);
      expect((await runUntil(api, owner, runIds.at(-1) as string, () => true)).status).toBe("running");
      const finished = await Promise.all(runIds.map((id) => runUntil(api, owner, id)));
      for (const [n, run] of finished.entries()) {
        expect(run.status).toBe("succeeded");
        const { until } = run.steps[1].output;
        expect(run.output).toEqual({ n, waited: until });
        expect(Date.parse(run.steps[2].started_at)).toBeGreaterThanOrEqual(Date.parse(until));
      }
    }, 30_000);

    test("a bad delay fails its step with a clear error", async () => {
      const flowId = await createFlow(api, owner, [{ name: "pause", subject: "delay", payload: { ms: -1 } }]);
      const run = await runUntil(api, owner, (await startRun(api, owner, flowId, {})).body.run_id);
      expect(run.error).toBe(
        'step "pause" failed: invalid payload: a delay takes {"ms": 0-31536000000} or {"until": "<ISO 8601 date-time>"}',
      );
    });

    test("a failed attempt is retried after its backoff: here the bucket is created while the run waits", async () => {
      const flowId = await createFlow(api, owner, [
        {
          name: "save",
          subject: "kv.put",
          payload: { bucket: "created-later", key: "k", value: "{{trigger}}" },
          options: { attempts: 3, backoff_ms: 4000 },
        },
      ]);
      const runId = (await startRun(api, owner, flowId, { v: 1 })).body.run_id;
      const retrying = await runUntil(api, owner, runId, (r) => r.steps[0]?.status === "retrying");
      expect(retrying.steps[0].attempts).toEqual([
        { started_at: expect.any(String), finished_at: expect.any(String), error: "bucket not found" },
      ]);
      expect((await call(api, owner, "PUT", "/storage/kv/created-later", {})).status).toBe(200);
      const run = await runUntil(api, owner, runId);
      expect(run.status).toBe("succeeded");
      const [first, second] = run.steps[0].attempts;
      expect(second.error).toBeUndefined();
      // The backoff was 2-4 s (half to all of backoff_ms).
      expect(Date.parse(second.started_at) - Date.parse(first.finished_at)).toBeGreaterThanOrEqual(2000);
      expect((await call(api, owner, "GET", "/storage/kv/created-later/keys/k")).body.value).toEqual({ v: 1 });
    }, 30_000);

    test("replay starts a new run with the same trigger data, linked to the original", async () => {
      const flowId = await createFlow(api, owner, [
        { name: "echo", subject: "transform", payload: { got: "{{trigger.x}}" } },
      ]);
      const original = (await startRun(api, owner, flowId, { x: "first" })).body.run_id;
      await runUntil(api, owner, original);
      const replayed = await call(api, owner, "POST", `/runs/${original}/replay`);
      expect(replayed.status).toBe(200);
      expect(replayed.body).toEqual({ message: "accepted", run_id: expect.any(String) });
      expect(replayed.body.run_id).not.toBe(original);
      const run = await runUntil(api, owner, replayed.body.run_id);
      expect(run).toMatchObject({
        status: "succeeded",
        replay_of: original,
        trigger: { x: "first" },
        output: { got: "first" },
      });

      expect(await call(api, stranger, "POST", `/runs/${original}/replay`)).toMatchObject({
        status: 404,
        body: { error: "run not found" },
      });
      expect(await call(api, owner, "POST", `/runs/${crypto.randomUUID()}/replay`)).toMatchObject({
        status: 404,
        body: { error: "run not found" },
      });
      expect(await call(api, owner, "POST", "/runs/x/replay")).toMatchObject({
        status: 400,
        body: { error: "invalid input: id: must be a UUID" },
      });
      // A run of a deleted flow cannot be replayed.
      expect((await call(api, owner, "DELETE", `/flows/${flowId}`)).status).toBe(200);
      expect(await call(api, owner, "POST", `/runs/${original}/replay`)).toMatchObject({
        status: 404,
        body: { error: "flow not found" },
      });
    });

    test("a flow's runs are listed by the time they were accepted: from (inclusive) and to (exclusive)", async () => {
      const flowId = await createFlow(api, owner);
      const runs = [];
      for (let i = 0; i < 3; i++) {
        runs.push(await runUntil(api, owner, (await startRun(api, owner, flowId, {})).body.run_id));
        await Bun.sleep(5);
      }
      const [first, second, third] = runs;
      const listed = async (query: string) =>
        (await call(api, owner, "GET", `/flows/${flowId}/runs?${query}`)).body.data.map(
          (run: { id: string }) => run.id,
        );
      expect(await listed(`from=${second.created_at}`)).toEqual([third.id, second.id]);
      expect(await listed(`to=${second.created_at}`)).toEqual([first.id]);
      expect(await listed(`from=${first.created_at}&to=${third.created_at}&limit=1`)).toEqual([second.id]);
      expect(await call(api, owner, "GET", `/flows/${flowId}/runs?from=yesterday`)).toMatchObject({
        status: 400,
        body: { error: "invalid input: from: must be an ISO 8601 time, such as 2026-11-26T07:00:00Z" },
      });
    });

    test("a flow's runs are listed newest first, by status, a page at a time", async () => {
      const flowId = await createFlow(api, owner, [
        { name: "check", subject: "kv.get", payload: { bucket: "{{trigger.bucket}}", key: "k" } },
      ]);
      await call(api, owner, "PUT", "/storage/kv/listing", {});
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        ids.push((await startRun(api, owner, flowId, { bucket: i % 2 === 0 ? "nope" : "listing" })).body.run_id);
      }
      await Promise.all(ids.map((id) => runUntil(api, owner, id)));
      const newestFirst = [...ids].reverse();

      const all = await call(api, owner, "GET", `/flows/${flowId}/runs`);
      expect(all.status).toBe(200);
      expect(all.body.data.map((r: { id: string }) => r.id)).toEqual(newestFirst);
      expect(all.body.next_cursor).toBeNull();
      expect(Object.keys(all.body.data[0]).sort()).toEqual(
        [
          "created_at",
          "duration_ms",
          "error",
          "finished_at",
          "flow_id",
          "id",
          "replay_of",
          "parent_run_id",
          "queue_reason",
          "end_reason",
          "taken_by",
          "revision",
          "started_at",
          "status",
        ].sort(),
      );

      const first = await call(api, owner, "GET", `/flows/${flowId}/runs?limit=2`);
      expect(first.body.data.map((r: { id: string }) => r.id)).toEqual(newestFirst.slice(0, 2));
      const second = await call(api, owner, "GET", `/flows/${flowId}/runs?limit=2&cursor=${first.body.next_cursor}`);
      expect(second.body.data.map((r: { id: string }) => r.id)).toEqual(newestFirst.slice(2, 4));
      const last = await call(api, owner, "GET", `/flows/${flowId}/runs?limit=2&cursor=${second.body.next_cursor}`);
      expect(last.body).toEqual({ data: [expect.objectContaining({ id: ids[0] })], next_cursor: null });

      const failed = await call(api, owner, "GET", `/flows/${flowId}/runs?status=failed`);
      expect(failed.body.data.map((r: { id: string }) => r.id)).toEqual([ids[4], ids[2], ids[0]]);
      expect(
        failed.body.data.every((r: { error: string }) => r.error === 'step "check" failed: bucket not found'),
      ).toBe(true);

      expect(await call(api, owner, "GET", `/flows/${flowId}/runs?status=done`)).toMatchObject({ status: 400 });
      expect(await call(api, owner, "GET", `/flows/${flowId}/runs?limit=0`)).toMatchObject({
        status: 400,
        body: { error: "invalid input: limit: must be 1-100" },
      });
      expect(await call(api, owner, "GET", `/flows/${flowId}/runs?cursor=abc`)).toMatchObject({
        status: 400,
        body: { error: "invalid input: cursor: must be a next_cursor of a previous page" },
      });
      expect(await call(api, stranger, "GET", `/flows/${flowId}/runs`)).toMatchObject({
        status: 404,
        body: { error: "flow not found" },
      });
      expect(await call(api, owner, "GET", `/flows/${crypto.randomUUID()}/runs`)).toMatchObject({
        status: 404,
        body: { error: "flow not found" },
      });
    });

    test("a webhook whose run was recorded but never queued (its process stopped) runs when the sender delivers it again", async () => {
      const created = await call(api, owner, "POST", "/flows", {
        name: "redelivered",
        trigger: { type: "webhook", delivery_id_field: "id" },
        steps: [{ name: "echo", subject: "transform", payload: { n: "{{trigger.body.n}}" } }],
      });
      expect(created.status).toBe(200);
      const flow = created.body.data;
      if (redis) {
        // The run queue's recovery of this new Redis namespace is over: only the retry can queue the run below.
        const recovered = async () =>
          (await api.services.broker.kvGet(PLATFORM_SCOPE, "run-recovery", "broker-data"))?.value.startsWith(
            "recovered ",
          ) === true;
        await eventually(recovered, 30_000);
      }
      // What a process that stopped between recording the delivery's run and queueing it left, a minute ago.
      const runId = Bun.randomUUIDv7();
      await api.services.db
        .insertInto("runs")
        .values({
          id: runId,
          account_id: owner.accountId,
          flow_id: flow.id,
          revision: 1,
          status: "queued",
          trigger: JSON.stringify({ body: { id: "evt_1", n: 1 } }),
          delivery_id: "evt_1",
          created_at: new Date(Date.now() - 60_000),
        })
        .execute();
      await api.services.db
        .insertInto("run_deliveries")
        .values({ flow_id: flow.id, delivery_id: "evt_1", run_id: runId })
        .execute();

      const redelivered = await api.request(`/webhooks/${flow.webhook.id}`, {
        method: "POST",
        json: { id: "evt_1", n: 2 },
      });
      expect({ status: redelivered.status, body: await redelivered.json() }).toEqual({
        status: 200,
        body: { message: "accepted", run_id: runId },
      });
      // The run the first delivery recorded runs, with its data; the repeat started none.
      expect(await runUntil(api, owner, runId)).toMatchObject({ status: "succeeded", output: { n: 1 } });
      expect((await call(api, owner, "GET", `/flows/${flow.id}/runs`)).body.data).toHaveLength(1);
    });

    test("over tRPC, runs.start accepts or waits like the REST route", async () => {
      const flowId = await createFlow(api, owner, [
        { name: "shape", subject: "transform", payload: { v: "{{trigger.v}}" } },
      ]);
      const trpc = (body: unknown) =>
        api.request("/trpc/runs.start", { method: "POST", headers: owner.headers, json: body }).then((r) => r.json());
      const accepted = (await trpc({ flow_id: flowId, trigger: { v: 1 } })) as { result: { data: unknown } };
      expect(accepted.result.data).toEqual({ message: "accepted", run_id: expect.any(String) });
      const waited = (await trpc({ flow_id: flowId, trigger: { v: 2 }, wait: true })) as { result: { data: unknown } };
      expect(waited.result.data).toEqual({
        status: "succeeded",
        run_id: expect.any(String),
        response: { status: 200, headers: {}, body: { v: 2 } },
      });
    });
  });
}
