import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eventually } from "@platform/core/testing";
import { type Caller, call, newCaller, startRun } from "./context.ts";
import { runModes, startTestApi, type TestApi } from "./harness.ts";

/**
 * Runs of flows that only compute (transform, respond, stop, and switch, for_each and
 * parallel of them, `if`) run in the API process that accepted them (issue 34): recorded as
 * every run is, answered without a worker. A process learns a flow's revision from its first start, which is queued; later
 * starts of the same revision run in place. Without a worker a queued wait-mode start answers
 * 202 once WAIT_TIMEOUT_MS has passed, and a start no one waits for leaves its run `queued`,
 * which is how these tests tell the two apart.
 */

// biome-ignore lint/suspicious/noExplicitAny: the assertions that read a body are its type check
type Body = any;

/** A wait-mode answer as a client sees it: status, headers (but those of the request: its date and id) and body text. */
async function waitFor(api: TestApi, caller: Caller, flowId: string, trigger: unknown) {
  const response = await api.request(`/flows/${flowId}/runs?wait=true`, {
    method: "POST",
    headers: caller.headers,
    json: trigger,
  });
  const headers = Object.fromEntries(
    [...response.headers].filter(([name]) => name !== "date" && name !== "x-request-id"),
  );
  return { status: response.status, headers, text: await response.text() };
}

async function flowOf(api: TestApi, caller: Caller, body: Record<string, unknown>): Promise<string> {
  const created = await call(api, caller, "POST", "/flows", { name: "in place", ...body });
  if (created.status !== 200) throw new Error(`POST /flows: ${created.status} ${JSON.stringify(created.body)}`);
  return created.body.data.id;
}

/** The flow's runs, newest first. */
async function runsOf(api: TestApi, caller: Caller, flowId: string): Promise<Body[]> {
  const listed = await call(api, caller, "GET", `/flows/${flowId}/runs`);
  expect(listed.status).toBe(200);
  return listed.body.data;
}

/** The view of a run. */
async function runOf(api: TestApi, caller: Caller, runId: string): Promise<Body> {
  const read = await call(api, caller, "GET", `/runs/${runId}`);
  expect(read.status).toBe(200);
  return read.body;
}

/**
 * Starts the flow without waiting until a start's run has ended by the time it is answered:
 * the process learns what a flow's first start runs a moment after answering it.
 */
async function learnedInPlace(api: TestApi, caller: Caller, flowId: string, trigger: unknown): Promise<void> {
  await eventually(async () => {
    const started = await startRun(api, caller, flowId, trigger);
    return (await runOf(api, caller, started.body.run_id)).finished_at !== null;
  });
}

/** A flow of `steps` started by a public webhook with `settings`, and a sender of its deliveries. */
async function webhookFlow(
  api: TestApi,
  caller: Caller,
  settings: Record<string, unknown>,
  steps: { steps: unknown[] },
) {
  const trigger = { type: "webhook", access: "public", delivery_id_field: "id", ...settings };
  const created = await call(api, caller, "POST", "/flows", { name: "hook", trigger, ...steps });
  expect(created.status).toBe(200);
  const send = (body: unknown) =>
    api.request(`/webhooks/${created.body.data.webhook.id}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  return { flowId: created.body.data.id as string, send };
}

/** transform + respond: the flow most tests here start. */
const GREETING = {
  steps: [
    { name: "greet", subject: "transform", payload: { text: "hello {{trigger.name}}" } },
    {
      name: "reply",
      subject: "respond",
      payload: { status: 201, headers: { "x-greeting": "yes" }, body: { said: "{{steps.greet.text}}" } },
    },
  ],
};

/** An `if` guard, a switch whose one case stops the run with its own answer, and a respond after it. */
const ROUTING = {
  steps: [
    { name: "vip", subject: "transform", payload: { tier: "gold" }, if: "{{trigger.total > 100}}" },
    {
      name: "route",
      switch: [
        {
          when: '{{trigger.kind = "refund"}}',
          steps: [
            {
              name: "refuse",
              stop: { output: { refused: true }, response: { status: 422, body: { error: "no refunds" } } },
            },
          ],
        },
      ],
      default: [
        { name: "order", subject: "transform", payload: { kind: "{{trigger.kind}}", vip: "{{steps.vip.tier}}" } },
      ],
    },
    { name: "reply", subject: "respond", payload: { body: { route: "{{steps.route}}" } } },
  ],
};

/** A computing step that fails when it runs: JSONata's `$error`. */
const FAILING = {
  steps: [
    { name: "check", subject: "transform", payload: { ok: "{{$error('order ' & trigger.order & ' unknown')}}" } },
  ],
};

const QUEUED = { status: 202, headers: expect.any(Object), text: expect.stringContaining('"run_id"') };

for (const { label, backend, redis, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(
    `wait-mode runs in place with no worker on ${label}${skip ? ` (skipped: ${skip})` : ""}`,
    () => {
      let api: TestApi;
      let owner: Caller;
      beforeAll(async () => {
        api = await startTestApi({ backend, redis, worker: false, env: { WAIT_TIMEOUT_MS: "1500" } });
        owner = await newCaller(api, "in-place");
      }, 60_000);
      afterAll(() => api.stop());

      test("a flow that only computes: its first start is queued (202), later ones answer the respond step, on record", async () => {
        const flowId = await flowOf(api, owner, GREETING);
        const first = await waitFor(api, owner, flowId, { name: "ada" });
        expect(first).toEqual(QUEUED);
        const queuedId = JSON.parse(first.text).run_id;

        for (const name of ["bo", "cy"]) {
          const answer = await waitFor(api, owner, flowId, { name });
          expect(answer.status).toBe(201);
          expect(answer.headers["x-greeting"]).toBe("yes");
          expect(answer.headers["content-type"]).toBe("application/json");
          expect(JSON.parse(answer.text)).toEqual({ said: `hello ${name}` });
        }

        // Every start is listed; the ones run in place ended, recorded durably with their steps.
        const runs = await runsOf(api, owner, flowId);
        expect(runs.map((run) => run.status)).toEqual(["succeeded", "succeeded", "queued"]);
        expect(runs[2].id).toBe(queuedId);
        for (const [index, name] of ["cy", "bo"].entries()) {
          const run = await runOf(api, owner, runs[index].id);
          expect(run).toMatchObject({ status: "succeeded", trigger: { name }, revision: 1, error: null });
          expect(run.finished_at).toEqual(expect.any(String));
          expect(run.steps).toMatchObject([
            { name: "greet", status: "succeeded", output: { text: `hello ${name}` } },
            { name: "reply", status: "succeeded" },
          ]);
          expect(run.steps.map((step: Body) => step.attempts.length)).toEqual([1, 1]);
        }
        expect((await runOf(api, owner, queuedId)).status).toBe("queued");
      });

      test("`if` guards, a switch and a stop run in place too", async () => {
        const flowId = await flowOf(api, owner, ROUTING);
        expect(await waitFor(api, owner, flowId, { kind: "order", total: 500 })).toEqual(QUEUED);

        const vip = await waitFor(api, owner, flowId, { kind: "order", total: 500 });
        expect(vip.status).toBe(200);
        expect(JSON.parse(vip.text)).toEqual({ route: { kind: "order", vip: "gold" } });
        const plain = await waitFor(api, owner, flowId, { kind: "order", total: 5 });
        expect(plain.status).toBe(200);
        expect(JSON.parse(plain.text)).toEqual({ route: { kind: "order", vip: null } });
        const refused = await waitFor(api, owner, flowId, { kind: "refund", total: 5 });
        expect(refused.status).toBe(422);
        expect(JSON.parse(refused.text)).toEqual({ error: "no refunds" });

        const [stopped, skipped] = await runsOf(api, owner, flowId);
        const stoppedRun = await runOf(api, owner, stopped.id);
        expect(stoppedRun).toMatchObject({ status: "succeeded", output: { refused: true } });
        expect(stoppedRun.steps).toMatchObject([
          { name: "vip", status: "skipped" },
          { name: "route", status: "succeeded", case: 0 },
          { name: "refuse", status: "succeeded" },
        ]);
        expect(stoppedRun.steps.map((step: Body) => step.name)).not.toContain("reply");
        const skippedRun = await runOf(api, owner, skipped.id);
        expect(skippedRun.status).toBe("succeeded");
        expect(skippedRun.steps).toMatchObject([
          { name: "vip", status: "skipped", output: null },
          { name: "route", status: "succeeded", case: "default", output: { kind: "order", vip: null } },
          { name: "order", status: "succeeded" },
          { name: "reply", status: "succeeded" },
        ]);
      });

      test("a for_each and a parallel step of computing steps run in place; items past IN_PLACE_MAX_STEPS go to the workers", async () => {
        const flowId = await flowOf(api, owner, {
          steps: [
            {
              name: "lines",
              for_each: "{{trigger.items}}",
              concurrency: 2,
              steps: [{ name: "line", subject: "transform", payload: { cents: "{{item * 100}}" } }],
            },
            {
              name: "sums",
              parallel: {
                total: [{ name: "total", subject: "transform", payload: { cents: "{{$sum(steps.lines.cents)}}" } }],
                count: [{ name: "count", subject: "transform", payload: { lines: "{{$count(steps.lines)}}" } }],
              },
            },
          ],
        });
        expect(await waitFor(api, owner, flowId, { items: [1] })).toEqual(QUEUED);

        const small = await waitFor(api, owner, flowId, { items: [1, 2, 3.5] });
        expect(small.status).toBe(200);
        expect(JSON.parse(small.text)).toEqual({ total: { cents: 650 }, count: { lines: 3 } });
        // Every step executed counts towards the 500, each item's own: the for_each, 497 items' steps,
        // the parallel step and its branches' two steps make 501.
        const large = await waitFor(api, owner, flowId, { items: Array.from({ length: 497 }, (_, index) => index) });
        expect(large).toEqual(QUEUED);

        const [handedOver, ranHere] = await runsOf(api, owner, flowId);
        expect(handedOver.status).toBe("queued");
        expect((await runOf(api, owner, handedOver.id)).steps).toEqual([]);
        const run = await runOf(api, owner, ranHere.id);
        expect(run).toMatchObject({ status: "succeeded", output: { total: { cents: 650 }, count: { lines: 3 } } });
        const shown = run.steps.map((step: Body) => [step.name, step.item ?? null, step.status]);
        expect(shown.slice(0, 5)).toEqual([
          ["lines", null, "succeeded"],
          ["line", [0], "succeeded"],
          ["line", [1], "succeeded"],
          ["line", [2], "succeeded"],
          ["sums", null, "succeeded"],
        ]);
        // The branches' steps, in either order.
        expect(shown.slice(5).sort()).toEqual([
          ["count", null, "succeeded"],
          ["total", null, "succeeded"],
        ]);

        // One step under the limit: 496 items, the for_each, the parallel step and its two branches' steps.
        const atLimit = await waitFor(api, owner, flowId, { items: Array.from({ length: 496 }, (_, index) => index) });
        expect(atLimit.status).toBe(200);
        expect(JSON.parse(atLimit.text).count).toEqual({ lines: 496 });
      });

      test("a run still computing after a second in place goes to the workers, nothing of it kept", async () => {
        // Each item sums 100,000 numbers (several milliseconds): 300 of them take longer than a second.
        const flowId = await flowOf(api, owner, {
          steps: [
            {
              name: "heavy",
              for_each: "{{[1..trigger.items]}}",
              steps: [{ name: "sum", subject: "transform", payload: { sum: "{{$sum([1..100000])}}" } }],
            },
          ],
        });
        expect(await waitFor(api, owner, flowId, { items: 1 })).toEqual(QUEUED);
        const quick = await waitFor(api, owner, flowId, { items: 2 });
        expect(quick.status).toBe(200);
        expect(JSON.parse(quick.text)).toEqual([{ sum: 5000050000 }, { sum: 5000050000 }]);

        // 301 steps, within the 500, but not within the second: queued (no worker here), no step kept.
        const long = await startRun(api, owner, flowId, { items: 300 });
        expect(long.status).toBe(200);
        const run = await runOf(api, owner, long.body.run_id);
        expect(run).toMatchObject({ status: "queued", finished_at: null, steps: [] });
      });

      test("a computing step that fails answers 500 with its error; the run is failed on record", async () => {
        const flowId = await flowOf(api, owner, FAILING);
        expect(await waitFor(api, owner, flowId, { order: "A-1" })).toEqual(QUEUED);

        const failed = await startRun(api, owner, flowId, { order: "A-2" }, "?wait=true");
        expect(failed.status).toBe(500);
        expect(failed.body).toEqual({
          error: 'step "check" failed: D3137: order A-2 unknown at character 7',
          run_id: expect.any(String),
        });
        const run = await runOf(api, owner, failed.body.run_id);
        expect(run).toMatchObject({
          status: "failed",
          error: 'step "check" failed: D3137: order A-2 unknown at character 7',
        });
        expect(run.steps).toMatchObject([{ name: "check", status: "failed" }]);
        expect(run.steps[0].attempts).toEqual([
          {
            started_at: expect.any(String),
            finished_at: expect.any(String),
            error: "D3137: order A-2 unknown at character 7",
          },
        ]);
      });

      test("a public webhook in wait mode runs in place too; its sender hears only that a failed flow failed", async () => {
        const hook = await webhookFlow(api, owner, { response_mode: "wait" }, GREETING);
        const deliver = async (body: unknown) => {
          const response = await hook.send(body);
          return { status: response.status, text: await response.text() };
        };
        expect(await deliver({ id: "d1", name: "ada" })).toMatchObject({ status: 202 });
        expect(await deliver({ id: "d2", name: "bo" })).toEqual({
          status: 201,
          text: JSON.stringify({ said: "hello bo" }),
        });
        // A delivery seen before starts nothing: it hears the first run's id.
        const again = await deliver({ id: "d2", name: "bo" });
        expect(again.status).toBe(200);
        const [answered] = await runsOf(api, owner, hook.flowId);
        expect(JSON.parse(again.text)).toEqual({ message: "accepted", run_id: answered.id });
        expect(answered.status).toBe("succeeded");

        const failing = await webhookFlow(api, owner, { response_mode: "wait" }, FAILING);
        const failed = async () => {
          const response = await failing.send({ order: "E-5" });
          return { status: response.status, body: (await response.json()) as Body };
        };
        expect((await failed()).status).toBe(202);
        const heard = await failed();
        expect(heard).toEqual({ status: 500, body: { error: "the flow failed", run_id: expect.any(String) } });
        expect(await runOf(api, owner, heard.body.run_id)).toMatchObject({
          status: "failed",
          error: 'step "check" failed: D3137: order E-5 unknown at character 7',
        });
      });

      test("a computing step reads the account's secrets in place; no answer or record holds their values", async () => {
        const value = "s3cr3t-in-place";
        expect((await call(api, owner, "PUT", "/secrets/tok", { value })).status).toBe(200);
        const flowId = await flowOf(api, owner, {
          steps: [
            {
              name: "check",
              subject: "transform",
              payload: { match: "{{trigger.key = secrets.tok ? 'yes' : $error('expected ' & secrets.tok)}}" },
            },
            { name: "reply", subject: "respond", payload: { body: { match: "{{steps.check.match}}" } } },
          ],
        });
        expect(await waitFor(api, owner, flowId, { key: value })).toEqual(QUEUED);

        const matched = await waitFor(api, owner, flowId, { key: value });
        expect(matched).toMatchObject({ status: 200, text: JSON.stringify({ match: "yes" }) });
        const wrong = await startRun(api, owner, flowId, { key: "guess" }, "?wait=true");
        expect(wrong.status).toBe(500);
        expect(wrong.body.error).toStartWith('step "check" failed: ');
        expect(wrong.body.error).toContain("[secret:tok]");
        expect(JSON.stringify(wrong.body)).not.toContain(value);
        const run = await runOf(api, owner, wrong.body.run_id);
        expect(run.status).toBe("failed");
        expect(JSON.stringify(run)).not.toContain(value);
      });

      test("a flow with a step that reaches out is never run in place, nor is a revision saved with one", async () => {
        const reaching = await flowOf(api, owner, {
          steps: [
            { name: "shape", subject: "transform", payload: { key: "{{trigger.key}}" } },
            { name: "lookup", subject: "kv.get", payload: { bucket: "orders", key: "{{steps.shape.key}}" } },
          ],
        });
        for (const key of ["a", "b", "c"]) expect(await waitFor(api, owner, reaching, { key })).toEqual(QUEUED);
        expect((await runsOf(api, owner, reaching)).map((run) => run.status)).toEqual(["queued", "queued", "queued"]);

        // A flow that ran in place, saved with an http.request: its new revision is queued.
        const flowId = await flowOf(api, owner, GREETING);
        expect(await waitFor(api, owner, flowId, { name: "ada" })).toEqual(QUEUED);
        expect((await waitFor(api, owner, flowId, { name: "bo" })).status).toBe(201);
        const saved = await call(api, owner, "PUT", `/flows/${flowId}`, {
          name: "in place, then not",
          steps: [
            ...GREETING.steps,
            { name: "notify", subject: "http.request", payload: { url: "http://127.0.0.1:9/hook" } },
          ],
        });
        expect(saved).toMatchObject({ status: 200, body: { data: { revision: 2 } } });
        for (const name of ["cy", "di"]) expect(await waitFor(api, owner, flowId, { name })).toEqual(QUEUED);

        // Saved again with computing steps only: its first start is queued, then it runs in place again.
        const restored = await call(api, owner, "PUT", `/flows/${flowId}`, { name: "in place again", ...GREETING });
        expect(restored).toMatchObject({ status: 200, body: { data: { revision: 3 } } });
        expect(await waitFor(api, owner, flowId, { name: "ed" })).toEqual(QUEUED);
        expect(await waitFor(api, owner, flowId, { name: "fay" })).toMatchObject({ status: 201 });

        const runs = await runsOf(api, owner, flowId);
        expect(runs.map((run) => [run.revision, run.status])).toEqual([
          [3, "succeeded"],
          [3, "queued"],
          [2, "queued"],
          [2, "queued"],
          [1, "succeeded"],
          [1, "queued"],
        ]);
      });
    },
  );

  describe.skipIf(Boolean(skip))(
    `starts no one waits for run in place with no worker on ${label}${skip ? ` (skipped: ${skip})` : ""}`,
    () => {
      let api: TestApi;
      let owner: Caller;
      beforeAll(async () => {
        api = await startTestApi({ backend, redis, worker: false });
        owner = await newCaller(api, "in-place-background");
      }, 60_000);
      afterAll(() => api.stop());

      test("a start by hand without wait: the first is queued, later ones have ended when the start is answered", async () => {
        const flowId = await flowOf(api, owner, GREETING);
        const accepted = async (name: string) => {
          const started = await startRun(api, owner, flowId, { name });
          expect(started.status).toBe(200);
          expect(started.body.message).toBe("accepted");
          return started.body.run_id as string;
        };
        expect((await runOf(api, owner, await accepted("ada"))).status).toBe("queued");
        await learnedInPlace(api, owner, flowId, { name: "probe" });

        for (const name of ["bo", "cy"]) {
          const run = await runOf(api, owner, await accepted(name));
          expect(run).toMatchObject({ status: "succeeded", trigger: { name }, error: null });
          expect(run.steps).toMatchObject([
            { name: "greet", status: "succeeded", output: { text: `hello ${name}` } },
            { name: "reply", status: "succeeded" },
          ]);
        }

        const failing = await flowOf(api, owner, FAILING);
        expect((await startRun(api, owner, failing, { order: "C-1" })).status).toBe(200);
        await learnedInPlace(api, owner, failing, { order: "C-0" });
        const failed = await startRun(api, owner, failing, { order: "C-2" });
        expect(failed.status).toBe(200);
        expect(await runOf(api, owner, failed.body.run_id)).toMatchObject({
          status: "failed",
          error: 'step "check" failed: D3137: order C-2 unknown at character 7',
        });
      });

      test("a webhook acknowledged runs in place; a delivery seen before starts nothing", async () => {
        const hook = await webhookFlow(api, owner, {}, GREETING);
        const deliver = async (body: unknown) => {
          const response = await hook.send(body);
          return { status: response.status, body: (await response.json()) as Body };
        };
        const accepted = { status: 200, body: { message: "accepted", run_id: expect.any(String) } };
        const first = await deliver({ id: "e1", name: "ada" });
        expect(first).toEqual(accepted);
        expect((await runOf(api, owner, first.body.run_id)).status).toBe("queued");
        await learnedInPlace(api, owner, hook.flowId, { id: "by hand", name: "probe" });

        const second = await deliver({ id: "e2", name: "bo" });
        expect(second).toEqual(accepted);
        expect(await runOf(api, owner, second.body.run_id)).toMatchObject({
          status: "succeeded",
          trigger: { id: "e2", name: "bo" },
          steps: [{ name: "greet", output: { text: "hello bo" } }, { name: "reply" }],
        });
        const listed = await runsOf(api, owner, hook.flowId);
        expect(listed[0]).toMatchObject({ id: second.body.run_id, status: "succeeded" });
        expect(listed.at(-1)).toMatchObject({ id: first.body.run_id, status: "queued" });
        expect(await deliver({ id: "e2", name: "bo" })).toEqual({ ...accepted, body: second.body });
        expect(await runsOf(api, owner, hook.flowId)).toEqual(listed);
      });
    },
  );

  describe.skipIf(Boolean(skip))(`RUNS_IN_PLACE=false on ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;
    let owner: Caller;
    beforeAll(async () => {
      api = await startTestApi({
        backend,
        redis,
        worker: false,
        env: { WAIT_TIMEOUT_MS: "1500", RUNS_IN_PLACE: "false" },
      });
      owner = await newCaller(api, "queued-always");
    }, 60_000);
    afterAll(() => api.stop());

    test("every start is queued for the workers, even of a flow that only computes", async () => {
      const flowId = await flowOf(api, owner, GREETING);
      for (const name of ["ada", "bo", "cy"]) expect(await waitFor(api, owner, flowId, { name })).toEqual(QUEUED);
      for (const name of ["di", "ed"]) expect((await startRun(api, owner, flowId, { name })).status).toBe(200);
      expect((await runsOf(api, owner, flowId)).map((run) => run.status)).toEqual(Array(5).fill("queued"));
    });
  });

  describe.skipIf(Boolean(skip))(
    `wait-mode runs in place beside a worker on ${label}${skip ? ` (skipped: ${skip})` : ""}`,
    () => {
      let api: TestApi;
      let owner: Caller;
      beforeAll(async () => {
        api = await startTestApi({ backend, redis, worker: true, env: { WAIT_TIMEOUT_MS: "5000" } });
        owner = await newCaller(api, "in-place-beside");
      }, 60_000);
      afterAll(() => api.stop());

      test("a start run in place answers what the worker's did, and counts as a run that ended", async () => {
        const flowId = await flowOf(api, owner, GREETING);
        const failing = await flowOf(api, owner, FAILING);
        const failed = () => startRun(api, owner, failing, { order: "B-7" }, "?wait=true");
        // The first start of each flow is the worker's. Once it has stopped, the starts after
        // them can only be answered in place.
        const answers = [await waitFor(api, owner, flowId, { name: "ada" })];
        const failures = [await failed()];
        await api.worker?.stop(1000);
        for (let i = 0; i < 3; i++) answers.push(await waitFor(api, owner, flowId, { name: "ada" }));
        for (let i = 0; i < 2; i++) failures.push(await failed());
        // Starts no one waits for run in place too, and count alike.
        for (const flow of [flowId, failing, failing]) {
          expect((await startRun(api, owner, flow, { name: "bo", order: "B-8" })).status).toBe(200);
        }

        expect(answers[0]).toMatchObject({ status: 201, text: JSON.stringify({ said: "hello ada" }) });
        for (const answer of answers.slice(1)) expect(answer).toEqual(answers[0] as (typeof answers)[number]);
        for (const failure of failures) {
          expect(failure).toMatchObject({
            status: 500,
            body: { error: 'step "check" failed: D3137: order B-7 unknown at character 7', run_id: expect.any(String) },
          });
        }
        const runs = await runsOf(api, owner, flowId);
        expect(runs.map((run) => run.status)).toEqual(Array(5).fill("succeeded"));
        expect((await runsOf(api, owner, failing)).map((run) => run.status)).toEqual(Array(5).fill("failed"));

        const counted = async () =>
          (
            await call(api, owner, "POST", "/monitoring/metrics/current", {
              metrics: ["runs.started", "runs.succeeded", "runs.failed"],
            })
          ).body.data?.map((metric: { value?: number }) => metric.value);
        // The recorder flushes its counts now and then.
        await eventually(async () => JSON.stringify(await counted()) === JSON.stringify([10, 5, 5]), 15_000);
      }, 30_000);
    },
  );
}
