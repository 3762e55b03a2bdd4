import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTracing, tracingEnvSchema, tracingSettings } from "@platform/core";
import { eventually } from "@platform/core/testing";
import { testEnv } from "@platform/db/testing";
import { bearer, signUp } from "./accounts-helpers.ts";
import { addMember } from "./accounts-members.ts";
import { call, newCaller } from "./context.ts";
import { startTestApi, type TestApi } from "./harness.ts";
import { OtlpReceiver, type ReceivedSpan } from "./otlp-receiver.ts";
import { PlatformProcesses } from "./process-helpers.ts";

/**
 * A run's trace beyond one delivery (issue 33): a run parked on `wait.event` and resumed by a
 * published event goes on in the trace its acceptance began; a `flow.call`'s run is accepted
 * under the calling step's span; and an account that turns `trace_run_data` on sees its runs'
 * trigger data and step outputs on their spans, redacted of the secrets the run read, where
 * an account that did not sees none. Scale-out as real processes (API and worker, protobuf),
 * embedded in this process (JSON).
 */

/** A value the runs read as a secret, and send in their trigger data besides. */
const SECRET = "sk_live_tracing_0123456789abcdef";
/** OTLP's span kind of the worker's `run` spans. */
const CONSUMER = 5;

interface Platform {
  base: string;
  receiver: OtlpReceiver;
  /** A new account's owner: the headers of a signed-in session. */
  owner(tag: string): Promise<Record<string, string>>;
}

interface Run {
  status: string;
  trace_id: string | null;
  steps: { name: string; status: string; child_run_id?: string }[];
}

async function json(base: string, headers: Record<string, string>, method: string, path: string, body?: unknown) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { ...headers, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  // biome-ignore lint/suspicious/noExplicitAny: the assertions that read a body are its type check
  return { status: response.status, body: (await response.json()) as any };
}

async function createFlow(platform: Platform, headers: Record<string, string>, flow: unknown): Promise<string> {
  const created = await json(platform.base, headers, "POST", "/flows", flow);
  expect(created.status).toBe(200);
  return created.body.data.id as string;
}

async function startRun(platform: Platform, headers: Record<string, string>, flowId: string, trigger: unknown) {
  const started = await json(platform.base, headers, "POST", `/flows/${flowId}/runs`, trigger);
  expect(started.status).toBe(200);
  return started.body.run_id as string;
}

/** The run once `until` holds of it (a bound on a hang, not a timed assertion). */
async function runWhen(
  platform: Platform,
  headers: Record<string, string>,
  runId: string,
  until: (run: Run) => boolean,
) {
  let run: Run | undefined;
  await eventually(async () => {
    run = (await json(platform.base, headers, "GET", `/runs/${runId}`)).body as Run;
    return until(run);
  }, 30_000);
  return run as Run;
}

/** The spans of `traceId` once `ready` holds of them (each process exports what it ended, in batches). */
async function spansOf(platform: Platform, traceId: string, ready: (spans: ReceivedSpan[]) => boolean) {
  await eventually(() => ready(platform.receiver.trace(traceId)), 30_000).catch(() => {
    const received = platform.receiver.trace(traceId).map((span) => `${span.name} (${span.service})`);
    throw new Error(`the trace's spans are not all in: ${received.join(", ")}`);
  });
  return platform.receiver.trace(traceId);
}

const all = (spans: ReceivedSpan[], name: string) => spans.filter((span) => span.name === name);

function named(spans: ReceivedSpan[], name: string): ReceivedSpan {
  const span = spans.find((one) => one.name === name);
  if (!span) throw new Error(`no span ${name} among ${spans.map((one) => one.name).join(", ")}`);
  return span;
}

function runTraces(platform: () => Platform) {
  test("a run resumed by an event goes on in its acceptance's trace: a run span per delivery", async () => {
    const p = platform();
    const owner = await p.owner("trace-wait");
    const flowId = await createFlow(p, owner, {
      name: "approval",
      steps: [
        { name: "approval", subject: "wait.event", payload: { key: "approve-{{trigger.order}}" } },
        { name: "after", subject: "transform", payload: { by: "{{steps.approval.by}}" } },
      ],
    });
    const runId = await startRun(p, owner, flowId, { order: "A-17" });
    await runWhen(p, owner, runId, (run) => run.steps.some((step) => step.status === "waiting"));
    const sent = await json(p.base, owner, "POST", "/events", { key: "approve-A-17", data: { by: "ada" } });
    expect(sent.body).toEqual({ data: { resumed: 1 } });
    const run = await runWhen(p, owner, runId, (one) => one.status === "succeeded");
    const traceId = run.trace_id as string;
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    const spans = await spansOf(
      p,
      traceId,
      (some) => all(some, "run").length >= 2 && all(some, "step after").length > 0,
    );
    const accept = named(spans, "accept manual");
    const runs = all(spans, "run");
    // Both deliveries, the one that parked and the one the event woke, under the acceptance.
    expect(runs.map((one) => [one.kind, one.parentSpanId])).toEqual([
      [CONSUMER, accept.spanId],
      [CONSUMER, accept.spanId],
    ]);
    const resumed = runs.find((one) => one.attributes["platform.run.delivery"] !== 1) ?? runs[1];
    expect(named(spans, "step after").parentSpanId).toBe(resumed?.spanId as string);
    // The wait's step span in each delivery: it waited in the first, took the event in the second.
    expect(
      all(spans, "step approval")
        .map((span) => span.parentSpanId)
        .sort(),
    ).toEqual(runs.map((one) => one.spanId).sort());
  }, 90_000);

  test("a wait-mode run in place is traced in the API process: its run span under the acceptance, no queued span", async () => {
    const p = platform();
    const owner = await p.owner("trace-in-place");
    const flowId = await createFlow(p, owner, {
      name: "computed",
      steps: [{ name: "sum", subject: "transform", payload: { sum: "{{trigger.a + trigger.b}}" } }],
    });
    const wait = () => json(p.base, owner, "POST", `/flows/${flowId}/runs?wait=true`, { a: 2, b: 3 });
    // The first start teaches the API process the flow runs in place; the next one does.
    expect((await wait()).body).toEqual({ sum: 5 });
    const runs = await json(p.base, owner, "GET", `/flows/${flowId}/runs`);
    expect((await wait()).body).toEqual({ sum: 5 });
    const latest = await json(p.base, owner, "GET", `/flows/${flowId}/runs?limit=1`);
    const runId = latest.body.data[0].id as string;
    expect(runs.body.data.map((one: { id: string }) => one.id)).not.toContain(runId);
    const run = await runWhen(p, owner, runId, (one) => one.status === "succeeded");
    // The run's spans end inside its acceptance's, which can reach the receiver in a later export.
    const spans = await spansOf(
      p,
      run.trace_id as string,
      (some) => all(some, "attempt 1").length > 0 && all(some, "accept manual").length > 0,
    );
    const accept = named(spans, "accept manual");
    const inPlace = named(spans, "run");
    expect(inPlace.parentSpanId).toBe(accept.spanId);
    expect(inPlace.attributes["platform.run.in_place"]).toBe(true);
    expect(inPlace.attributes["platform.run.delivery"]).toBeUndefined();
    expect(all(spans, "queued")).toEqual([]);
    expect(named(spans, "step sum").parentSpanId).toBe(inPlace.spanId);
    // Every span of the run is the accepting process's.
    expect([...new Set(spans.map((span) => span.service))]).toEqual([accept.service]);
  }, 90_000);

  test("a run in place handed to the workers past its step limit: its in-place spans end without an error, marked handed over, and the worker's run follows", async () => {
    const p = platform();
    const owner = await p.owner("trace-handed-over");
    // 510 items: the for-each would take the execution past the 500 steps run in place.
    const flowId = await createFlow(p, owner, {
      name: "long loop",
      steps: [
        { name: "lines", for_each: "{{[1..510]}}", steps: [{ name: "line", subject: "transform", payload: {} }] },
      ],
    });
    const wait = () => json(p.base, owner, "POST", `/flows/${flowId}/runs?wait=true`, {});
    // The first start teaches the API process the flow runs in place; the next one tries.
    expect((await wait()).status).toBe(200);
    expect((await wait()).status).toBe(200);
    const latest = await json(p.base, owner, "GET", `/flows/${flowId}/runs?limit=1`);
    const run = await runWhen(p, owner, latest.body.data[0].id, (one) => one.status === "succeeded");
    const spans = await spansOf(p, run.trace_id as string, (some) => all(some, "run").length === 2);
    const [inPlace, worked] = [...all(spans, "run")].sort(
      (a, b) =>
        Number(Boolean(b.attributes["platform.run.in_place"])) - Number(Boolean(a.attributes["platform.run.in_place"])),
    );
    expect(inPlace?.attributes).toMatchObject({ "platform.run.in_place": true, "platform.handed_over": true });
    expect(worked?.attributes["platform.run.delivery"]).toBe(1);
    const lines = all(spans, "step lines").find((span) => span.parentSpanId === inPlace?.spanId);
    expect(lines?.attributes["platform.handed_over"]).toBe(true);
    // Nothing failed: no span of the trace ends with an error.
    expect(spans.filter((span) => span.statusCode === 2).map((span) => span.name)).toEqual([]);
  }, 90_000);

  test("a flow.call's run is in its caller's trace, accepted under the calling step's span", async () => {
    const p = platform();
    const owner = await p.owner("trace-call");
    const childFlow = await createFlow(p, owner, {
      name: "child",
      steps: [{ name: "double", subject: "transform", payload: { n: "{{trigger.n * 2}}" } }],
    });
    const parentFlow = await createFlow(p, owner, {
      name: "parent",
      steps: [{ name: "call", subject: "flow.call", payload: { flow_id: childFlow, input: { n: 21 } } }],
    });
    const runId = await startRun(p, owner, parentFlow, {});
    const parent = await runWhen(p, owner, runId, (run) => run.status === "succeeded");
    const childId = parent.steps.find((step) => step.name === "call")?.child_run_id as string;
    const child = await runWhen(p, owner, childId, (run) => run.status === "succeeded");
    expect(child.trace_id).toBe(parent.trace_id);
    // The parent's run waits for the child in its delivery, or parks and takes a second one: the
    // spans asked for are the calling step's, its run's, and the child's.
    const spans = await spansOf(p, parent.trace_id as string, (some) => {
      const accepting = some.find((span) => span.name === "accept flow.call");
      const calling = some.find((span) => span.name === "step call" && span.spanId === accepting?.parentSpanId);
      return (
        some.some((span) => span.name === "run" && span.spanId === calling?.parentSpanId) &&
        some.some((span) => span.name === "run" && span.attributes["platform.run.id"] === childId) &&
        all(some, "step double").length > 0
      );
    });
    const accepted = named(spans, "accept flow.call");
    expect(accepted.attributes["platform.run.id"]).toBe(childId);
    const calling = all(spans, "step call").find((span) => span.spanId === accepted.parentSpanId);
    expect(calling).toBeDefined();
    // The calling step's span is in a delivery of the parent's run; the child's run span under its acceptance.
    const parentRuns = all(spans, "run").filter((span) => span.attributes["platform.run.id"] === runId);
    expect(parentRuns.map((span) => span.spanId)).toContain(calling?.parentSpanId as string);
    const childRun = all(spans, "run").find((span) => span.attributes["platform.run.id"] === childId);
    expect(childRun?.parentSpanId).toBe(accepted.spanId);
    expect(named(spans, "step double").parentSpanId).toBe(childRun?.spanId as string);
  }, 90_000);

  test("trigger data and step outputs are on the spans only of an account that turned trace_run_data on, redacted of its secrets", async () => {
    const p = platform();
    const owner = await p.owner("trace-data");
    expect((await json(p.base, owner, "PUT", "/secrets/api_token", { value: SECRET })).status).toBe(200);
    const flowId = await createFlow(p, owner, {
      name: "echo",
      steps: [
        {
          name: "echo",
          subject: "transform",
          payload: { note: "{{trigger.note}}", authorization: "Bearer {{secrets.api_token}}" },
        },
      ],
    });
    const trigger = { note: "shipped-to-ada", pasted: SECRET };
    const traced = async () => {
      const runId = await startRun(p, owner, flowId, trigger);
      const run = await runWhen(p, owner, runId, (one) => one.status === "succeeded");
      return spansOf(
        p,
        run.trace_id as string,
        (some) => all(some, "run").length > 0 && all(some, "step echo").length > 0,
      );
    };

    expect((await json(p.base, owner, "GET", "/accounts/settings")).body.data.trace_run_data).toBe(false);
    const off = await traced();
    for (const span of off) {
      expect(Object.keys(span.attributes)).not.toContain("platform.run.trigger");
      expect(Object.keys(span.attributes)).not.toContain("platform.step.output");
    }
    expect(JSON.stringify(off)).not.toContain("shipped-to-ada");

    const turnedOn = await json(p.base, owner, "PUT", "/accounts/settings", { trace_run_data: true });
    expect(turnedOn).toMatchObject({ status: 200, body: { data: { trace_run_data: true, run_retention_days: 30 } } });
    const on = await traced();
    const recorded = JSON.parse(String(named(on, "run").attributes["platform.run.trigger"]));
    expect(recorded).toEqual({ note: "shipped-to-ada", pasted: "[secret:api_token]" });
    const output = JSON.parse(String(named(on, "step echo").attributes["platform.step.output"]));
    expect(output).toEqual({ note: "shipped-to-ada", authorization: "Bearer [secret:api_token]" });
    expect(JSON.stringify(on)).not.toContain(SECRET);

    // Off again: every process hears it, and the next run's spans carry nothing.
    const turnedOff = await json(p.base, owner, "PUT", "/accounts/settings", { trace_run_data: false });
    expect(turnedOff.body.data.trace_run_data).toBe(false);
    expect(JSON.stringify(await traced())).not.toContain("shipped-to-ada");
  }, 90_000);
}

describe.skipIf(!testEnv.DATABASE_URL || !testEnv.REDIS_URL)(
  "run traces in scale-out: API and worker processes, protobuf",
  () => {
    let receiver: OtlpReceiver;
    let processes: PlatformProcesses;

    beforeAll(async () => {
      receiver = new OtlpReceiver();
      processes = await PlatformProcesses.start({
        redisUrl: testEnv.REDIS_URL as string,
        env: {
          OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
          OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf",
          OTEL_BSP_SCHEDULE_DELAY: "50",
        },
      });
      processes.worker("worker");
    }, 120_000);
    afterAll(async () => {
      await processes?.stop();
      receiver.stop();
    });

    runTraces(() => ({
      base: processes.api,
      receiver,
      owner: async (tag) => ({ authorization: `Bearer ${await processes.signUp(tag)}` }),
    }));
  },
);

describe("run traces in embedded mode: one process, JSON", () => {
  let receiver: OtlpReceiver;
  let api: TestApi;
  let tracing: { shutdown(): Promise<void> };

  beforeAll(async () => {
    receiver = new OtlpReceiver();
    api = await startTestApi({ backend: "pglite", redis: false, worker: true });
    const env = tracingEnvSchema.parse({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_BSP_SCHEDULE_DELAY: "50",
    });
    tracing = startTracing(tracingSettings(env, "platform-api"));
  }, 60_000);
  afterAll(async () => {
    await tracing?.shutdown();
    await api.stop();
    receiver.stop();
  });

  runTraces(() => ({
    base: api.url,
    receiver,
    owner: async (tag) => (await newCaller(api, tag)).headers,
  }));

  test("trace_run_data is an owner's or admin's to change, never a member's or an API key's; another JSON type is a 400 naming it", async () => {
    const owner = await signUp(api, "trace-data-roles");
    const ownerCaller = { headers: bearer(owner.auth.auth_token) };
    const key = await call(api, ownerCaller, "POST", "/accounts/api-keys", { name: "k" });
    const keyCaller = { headers: { "x-api-key": key.body.data.key as string } };
    expect(await call(api, keyCaller, "PUT", "/accounts/settings", { trace_run_data: true })).toMatchObject({
      status: 403,
      body: { error: "this operation needs a signed-in user (Bearer token), not an API key" },
    });
    const member = await addMember(api, owner.auth.auth_token, "trace-data-member", "member");
    expect(
      await call(api, { headers: bearer(member.auth.auth_token) }, "PUT", "/accounts/settings", {
        trace_run_data: true,
      }),
    ).toMatchObject({ status: 403, body: { error: "only owners and admins can change the account's settings" } });
    for (const value of ["true", 1, null]) {
      expect(await call(api, ownerCaller, "PUT", "/accounts/settings", { trace_run_data: value })).toMatchObject({
        status: 400,
        body: { problems: [{ path: "trace_run_data", message: "must be true or false" }] },
      });
    }
    expect((await call(api, ownerCaller, "GET", "/accounts/settings")).body.data.trace_run_data).toBe(false);
    const admin = await addMember(api, owner.auth.auth_token, "trace-data-admin", "admin");
    const adminCaller = { headers: bearer(admin.auth.auth_token) };
    expect(await call(api, adminCaller, "PUT", "/accounts/settings", { trace_run_data: true })).toMatchObject({
      status: 200,
      body: { data: { trace_run_data: true, run_retention_days: 30 } },
    });
    // A setting left out stays as it is.
    expect(await call(api, ownerCaller, "PUT", "/accounts/settings", { run_retention_days: 7 })).toMatchObject({
      status: 200,
      body: { data: { trace_run_data: true, run_retention_days: 7 } },
    });
  });
});
