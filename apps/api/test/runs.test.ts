import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type Caller, call, createFlow, newCaller, runUntil, startRun } from "./context.ts";
import { pastOneHostVariants, runModes, startTestApi, type TestApi } from "./harness.ts";

for (const { label, backend, redis, skip } of [...runModes(), ...(await pastOneHostVariants())]) {
  describe.skipIf(Boolean(skip))(`runs on ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;
    let owner: Caller;
    let stranger: Caller;
    beforeAll(async () => {
      api = await startTestApi({ backend, redis, worker: true });
      owner = await newCaller(api, "runs");
      stranger = await newCaller(api, "stranger");
    }, 60_000);
    afterAll(() => api.stop());

    test("a run started by hand is accepted at once, then runs its steps in order with the trigger data", async () => {
      const flowId = await createFlow(api, owner, [
        {
          name: "shape",
          subject: "transform",
          payload: { order: "{{trigger.order}}", note: "order {{trigger.order.id}}" },
        },
        {
          name: "reply",
          subject: "transform",
          payload: { id: "{{steps.shape.order.id}}", items: "{{trigger.items}}" },
        },
      ]);
      const started = await startRun(api, owner, flowId, { order: { id: 7, total: 9.5 }, items: [1, 2] });
      expect(started.status).toBe(200);
      expect(started.body).toEqual({ message: "accepted", run_id: expect.any(String) });

      const run = await runUntil(api, owner, started.body.run_id);
      expect(run).toMatchObject({
        id: started.body.run_id,
        flow_id: flowId,
        revision: 1,
        status: "succeeded",
        trigger: { order: { id: 7, total: 9.5 }, items: [1, 2] },
        output: { id: 7, items: [1, 2] },
        error: null,
        replay_of: null,
      });
      expect(run.steps.map((step: { name: string }) => step.name)).toEqual(["shape", "reply"]);
      expect(run.steps[0]).toMatchObject({
        status: "succeeded",
        output: { order: { id: 7, total: 9.5 }, note: "order 7" },
        attempts: [{ started_at: expect.any(String), finished_at: expect.any(String) }],
      });
      expect(run.duration_ms).toBeGreaterThanOrEqual(0);
      expect(Date.parse(run.finished_at)).toBeGreaterThanOrEqual(Date.parse(run.created_at));
    });

    test("large trigger data runs alike (read from the run's record rather than carried by its queue entry)", async () => {
      const flowId = await createFlow(api, owner, [
        { name: "echo", subject: "transform", payload: { note: "{{trigger.note}}", n: "{{trigger.n}}" } },
      ]);
      const note = "x".repeat(20_000);
      for (const trigger of [
        { note: "short", n: 1 },
        { note, n: 2 },
      ]) {
        const started = await startRun(api, owner, flowId, trigger);
        expect(started.status).toBe(200);
        const run = await runUntil(api, owner, started.body.run_id);
        expect(run).toMatchObject({ status: "succeeded", trigger, output: trigger });
        expect(Date.parse(run.started_at)).toBeGreaterThanOrEqual(Date.parse(run.created_at));
        expect(Date.parse(run.started_at)).toBeLessThanOrEqual(Date.parse(run.finished_at));
      }
    });

    test("kv.put, kv.get and stream.publish steps act on the account's storage", async () => {
      expect((await call(api, owner, "PUT", "/storage/kv/orders", { description: "" })).status).toBe(200);
      expect((await call(api, owner, "PUT", "/storage/streams/events", { description: "" })).status).toBe(200);
      const flowId = await createFlow(api, owner, [
        {
          name: "save",
          subject: "kv.put",
          payload: { bucket: "orders", key: "o-{{trigger.id}}", value: "{{trigger}}" },
        },
        { name: "load", subject: "kv.get", payload: { bucket: "orders", key: "o-{{trigger.id}}" } },
        { name: "missing", subject: "kv.get", payload: { bucket: "orders", key: "nothing-here" } },
        {
          name: "announce",
          subject: "stream.publish",
          payload: { stream: "events", subject: "orders.saved", body: { order: "{{steps.load.value}}" } },
        },
      ]);
      const started = await startRun(api, owner, flowId, { id: 41, total: 3 });
      const run = await runUntil(api, owner, started.body.run_id);
      expect(run.status).toBe("succeeded");
      const [save, load, missing, announce] = run.steps;
      expect(save.output).toEqual({ revision: expect.any(Number) });
      expect(load.output).toEqual({ key: "o-41", value: { id: 41, total: 3 }, revision: save.output.revision });
      expect(missing.output).toBeNull();
      expect(announce.output).toEqual({ seq: 1 });

      expect((await call(api, owner, "GET", "/storage/kv/orders/keys/o-41")).body.value).toEqual({ id: 41, total: 3 });
      const messages = await call(api, owner, "GET", "/storage/streams/events/messages");
      expect(messages.body.data).toEqual([
        { seq: 1, subject: "orders.saved", body: { order: { id: 41, total: 3 } }, ts: expect.any(Number) },
      ]);
    });

    test("{{secrets.*}} references read the account's secrets when the step runs", async () => {
      expect((await call(api, owner, "PUT", "/secrets/api-token", { value: "s3cret" })).status).toBe(200);
      const flowId = await createFlow(api, owner, [
        { name: "auth", subject: "transform", payload: { header: "Bearer {{secrets.api-token}}" } },
        { name: "lost", subject: "transform", payload: { value: "{{secrets.not-there}}" } },
      ]);
      const run = await runUntil(api, owner, (await startRun(api, owner, flowId, {})).body.run_id);
      expect(run.status).toBe("failed");
      expect(run.steps[0].output).toEqual({ header: "Bearer s3cret" });
      expect(run.steps[1]).toMatchObject({ status: "failed", error: 'secret "not-there" does not exist' });
      expect(run.error).toBe('step "lost" failed: secret "not-there" does not exist');
    });

    test("a step that fails ends the run failed, naming the step; later steps do not run", async () => {
      const flowId = await createFlow(api, owner, [
        { name: "save", subject: "kv.put", payload: { bucket: "no-such-bucket", key: "k", value: 1 } },
        { name: "after", subject: "transform", payload: {} },
      ]);
      const run = await runUntil(api, owner, (await startRun(api, owner, flowId)).body.run_id);
      expect(run).toMatchObject({ status: "failed", error: 'step "save" failed: bucket not found', output: null });
      expect(run.steps).toHaveLength(1);
      expect(run.steps[0].attempts).toEqual([
        { started_at: expect.any(String), finished_at: expect.any(String), error: "bucket not found" },
      ]);
    });

    test("starting a run: unknown, foreign and malformed flows, bad bodies, no credential", async () => {
      const flowId = await createFlow(api, owner, [{ name: "t", subject: "transform" }]);
      expect(await startRun(api, owner, crypto.randomUUID(), {})).toMatchObject({
        status: 404,
        body: { error: "flow not found" },
      });
      expect(await startRun(api, stranger, flowId, {})).toMatchObject({
        status: 404,
        body: { error: "flow not found" },
      });
      expect(await startRun(api, owner, "not-a-uuid", {})).toMatchObject({
        status: 400,
        body: { error: "invalid input: id: must be a UUID" },
      });
      expect(await startRun(api, null, flowId, {})).toMatchObject({
        status: 401,
        body: { error: "missing credential" },
      });
      expect(await startRun(api, owner, flowId, [1, 2])).toMatchObject({
        status: 400,
        body: { error: "invalid input: body: must be a JSON object (the trigger data)" },
      });
      expect(await startRun(api, owner, flowId, { a: 1 }, "?wait=maybe")).toMatchObject({
        status: 400,
        body: { error: "invalid input: wait: must be true or false" },
      });
      const notJson = await api.request(`/flows/${flowId}/runs`, {
        method: "POST",
        headers: { ...owner.headers, "content-type": "text/plain" },
        body: "hello",
      });
      expect(notJson.status).toBe(415);
      expect(await notJson.json()).toEqual({ error: "the trigger data must be sent as application/json" });
      const broken = await api.request(`/flows/${flowId}/runs`, {
        method: "POST",
        headers: { ...owner.headers, "content-type": "application/json" },
        body: "{nope",
      });
      expect(broken.status).toBe(400);
      expect(await broken.json()).toEqual({ error: "request body is not valid JSON" });
      const nul = await startRun(api, owner, flowId, { text: "a\u0000b" });
      expect(nul).toMatchObject({
        status: 400,
        body: { error: "invalid input: text: must not contain NUL characters" },
      });
      // An empty body is the empty trigger.
      const empty = await api.request(`/flows/${flowId}/runs`, { method: "POST", headers: owner.headers });
      expect(empty.status).toBe(200);
      const { run_id } = (await empty.json()) as { run_id: string };
      expect((await runUntil(api, owner, run_id)).trigger).toEqual({});
    });

    test("a run is the account's own: another account reads 404, a malformed id is 400", async () => {
      const flowId = await createFlow(api, owner, [{ name: "t", subject: "transform" }]);
      const runId = (await startRun(api, owner, flowId, {})).body.run_id;
      expect(await call(api, stranger, "GET", `/runs/${runId}`)).toMatchObject({
        status: 404,
        body: { error: "run not found" },
      });
      expect(await call(api, owner, "GET", `/runs/${crypto.randomUUID()}`)).toMatchObject({
        status: 404,
        body: { error: "run not found" },
      });
      expect(await call(api, owner, "GET", "/runs/nope")).toMatchObject({
        status: 400,
        body: { error: "invalid input: id: must be a UUID" },
      });
      expect(await call(api, null, "GET", `/runs/${runId}`)).toMatchObject({
        status: 401,
        body: { error: "missing credential" },
      });
    });
  });
}
