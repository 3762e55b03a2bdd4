import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTracing, tracingEnvSchema, tracingSettings } from "@platform/core";
import { eventually } from "@platform/core/testing";
import { testEnv } from "@platform/db/testing";
import type { Server } from "bun";
import Stripe from "stripe";
import { newCaller } from "./context.ts";
import { startTestApi, type TestApi } from "./harness.ts";
import { OtlpReceiver, type ReceivedSpan, type OtlpReceiver as Receiver } from "./otlp-receiver.ts";
import { PlatformProcesses } from "./process-helpers.ts";

/**
 * OpenTelemetry traces (issue 33): a Stripe-signed webhook starts a three-step flow (a
 * transform, an http.request whose first attempt the upstream fails, a for_each of two items);
 * a local OTLP receiver gets one trace of the run across the processes that accepted and ran
 * it, the upstream gets the traceparent of the request's span, and the trace continues the
 * caller's or links to it as TRACE_INCOMING says. Scale-out as real processes (API and worker,
 * protobuf), embedded in this process (JSON).
 */
const STRIPE_SECRET = "whsec_tracing0000000000000000000";
const stripe = new Stripe("sk_test_x");
/** The caller's span, as a traceparent header a sender would send. */
const CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN = "00f067aa0ba902b7";
const CALLER = `00-${CALLER_TRACE}-${CALLER_SPAN}-01`;
/** OTLP's span kinds. */
const SERVER = 2;
const CLIENT = 3;
const CONSUMER = 5;

/** An upstream that fails each first call of a run (500) and keeps the traceparent of every call. */
function flakyUpstream(): { server: Server<undefined>; traceparents: string[] } {
  const traceparents: string[] = [];
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch(request) {
      traceparents.push(request.headers.get("traceparent") ?? "");
      return traceparents.length % 2 === 1 ? new Response("try again", { status: 500 }) : Response.json({ ok: true });
    },
  });
  return { server, traceparents };
}

const flow = (upstream: string) => ({
  name: "traced",
  trigger: { type: "webhook", access: "signature", service: "stripe", signing_secret: STRIPE_SECRET },
  steps: [
    { name: "shape", subject: "transform", payload: { charge: "{{trigger.body.data.object.id}}" } },
    {
      name: "call",
      subject: "http.request",
      payload: { url: `${upstream}/charges`, method: "POST", body: { charge: "{{steps.shape.charge}}" } },
      options: { attempts: 2, backoff_ms: 1 },
    },
    {
      name: "lines",
      for_each: "{{[1, 2]}}",
      steps: [{ name: "line", subject: "transform", payload: { n: "{{item}}" } }],
    },
  ],
});

/** Creates the flow, delivers a Stripe-signed event with the caller's traceparent, and waits for the run's whole trace. */
async function tracedRun(base: string, headers: Record<string, string>, upstream: string, receiver: Receiver) {
  const created = await fetch(`${base}/flows`, {
    method: "POST",
    headers: { ...headers, "content-type": "application/json" },
    body: JSON.stringify(flow(upstream)),
  });
  const { data } = (await created.json()) as { data: { id: string; webhook: { id: string } } };
  const payload = JSON.stringify({ id: "evt_1", type: "charge.succeeded", data: { object: { id: "ch_1" } } });
  const signature = await stripe.webhooks.generateTestHeaderStringAsync({ payload, secret: STRIPE_SECRET });
  const delivered = await fetch(`${base}/webhooks/${data.webhook.id}`, {
    method: "POST",
    headers: { "content-type": "application/json", "stripe-signature": signature, traceparent: CALLER },
    body: payload,
  });
  expect(delivered.status).toBe(200);
  const { run_id: runId } = (await delivered.json()) as { run_id: string };
  let run: { status: string; trace_id: string | null } = { status: "queued", trace_id: null };
  await eventually(async () => {
    run = (await (await fetch(`${base}/runs/${runId}`, { headers })).json()) as typeof run;
    return run.status === "succeeded";
  }, 30_000);
  expect(run.trace_id).toMatch(/^[0-9a-f]{32}$/);
  const traceId = run.trace_id as string;
  // Each process exports what it ended; the run's span ends last in the worker.
  const ended = (name: string) => receiver.trace(traceId).some((span) => span.name === name);
  await eventually(() => ended("accept webhook") && ended("run"), 30_000);
  return { traceId, spans: receiver.trace(traceId) };
}

/** The one span named `name` (several: the first), failing when there is none. */
function named(spans: ReceivedSpan[], name: string): ReceivedSpan {
  const span = spans.find((one) => one.name === name);
  if (!span) throw new Error(`no span ${name} among ${spans.map((one) => one.name).join(", ")}`);
  return span;
}

/** What every traced run shows, whichever processes ran it. */
function expectRunTree(spans: ReceivedSpan[], traceparents: string[], services: { api: string; worker: string }) {
  const accept = named(spans, "accept webhook");
  const run = named(spans, "run");
  const queued = named(spans, "queued");
  const call = named(spans, "step call");
  const attempts = spans.filter((span) => span.parentSpanId === call.spanId);
  const [first, second] = [named(attempts, "attempt 1"), named(attempts, "attempt 2")];
  const requests = spans.filter((span) => span.name === "HTTP POST");
  const lines = named(spans, "step lines");
  expect({ kind: accept.kind, service: accept.service }).toEqual({ kind: SERVER, service: services.api });
  expect({ kind: run.kind, service: run.service, parent: run.parentSpanId }).toEqual({
    kind: CONSUMER,
    service: services.worker,
    parent: accept.spanId,
  });
  expect(queued.parentSpanId).toBe(accept.spanId);
  for (const step of ["step shape", "step call", "step lines"])
    expect(named(spans, step).parentSpanId).toBe(run.spanId);
  expect(call.attributes).toMatchObject({ "platform.step.subject": "http.request" });
  // The failing attempt has its error, as the run records it; the retry succeeded.
  expect(first.parentSpanId).toBe(call.spanId);
  expect(first.statusCode).toBe(2);
  expect(first.statusMessage).toContain("answered 500");
  expect(second.statusCode).not.toBe(2);
  // Each attempt's request is a client span, whose traceparent the upstream received.
  expect(requests.map((request) => `${request.kind} ${request.parentSpanId}`).sort()).toEqual(
    [`${CLIENT} ${first.spanId}`, `${CLIENT} ${second.spanId}`].sort(),
  );
  expect(traceparents.slice(-2).sort()).toEqual(
    requests.map((request) => `00-${request.traceId}-${request.spanId}-01`).sort(),
  );
  const items = spans.filter((span) => span.name.startsWith("item "));
  expect(items.map((item) => [item.name, item.parentSpanId]).sort()).toEqual([
    ["item 0", lines.spanId],
    ["item 1", lines.spanId],
  ]);
  // Never the trigger data or outputs.
  expect(JSON.stringify(spans)).not.toContain("ch_1");
}

describe.skipIf(!testEnv.DATABASE_URL || !testEnv.REDIS_URL)(
  "traces in scale-out: API and worker processes, protobuf",
  () => {
    let receiver: OtlpReceiver;
    let upstream: ReturnType<typeof flakyUpstream>;
    let platform: PlatformProcesses;

    beforeAll(async () => {
      receiver = new OtlpReceiver();
      upstream = flakyUpstream();
      platform = await PlatformProcesses.start({
        redisUrl: testEnv.REDIS_URL as string,
        env: {
          OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
          OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf",
          OTEL_BSP_SCHEDULE_DELAY: "50",
          TRACE_INCOMING: "trust",
        },
      });
      platform.worker("worker");
    }, 120_000);
    afterAll(async () => {
      await platform?.stop();
      upstream.server.stop(true);
      receiver.stop();
    });

    test("one trace from the webhook through the worker's steps to the upstream, continuing the caller's (trust)", async () => {
      const token = await platform.signUp("tracing");
      const { traceId, spans } = await tracedRun(
        platform.api,
        { authorization: `Bearer ${token}` },
        `http://127.0.0.1:${upstream.server.port}`,
        receiver,
      );
      expect(traceId).toBe(CALLER_TRACE);
      expect(named(spans, "accept webhook").parentSpanId).toBe(CALLER_SPAN);
      expectRunTree(spans, upstream.traceparents, { api: "platform-api", worker: "platform-worker" });
      expect([...receiver.encodings]).toEqual(["application/x-protobuf"]);
    }, 90_000);
  },
);

describe("traces in embedded mode: one process, JSON", () => {
  let receiver: OtlpReceiver;
  let upstream: ReturnType<typeof flakyUpstream>;
  let api: TestApi;
  let tracing: { shutdown(): Promise<void> } | undefined;

  beforeAll(async () => {
    receiver = new OtlpReceiver();
    upstream = flakyUpstream();
    api = await startTestApi({
      backend: "pglite",
      redis: false,
      worker: true,
      env: { HTTP_REQUEST_ALLOWED_NETWORKS: "127.0.0.1" },
    });
  }, 60_000);
  /** From here on this process traces (the API with its worker, as embedded mode runs them). */
  const traceHere = () => {
    const env = tracingEnvSchema.parse({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_BSP_SCHEDULE_DELAY: "50",
    });
    tracing ??= startTracing(tracingSettings(env, "platform-api"));
  };
  afterAll(async () => {
    await tracing?.shutdown();
    await api.stop();
    upstream.server.stop(true);
    receiver.stop();
  });

  test("a run accepted while the process does not trace has no trace id", async () => {
    const owner = await newCaller(api, "untraced");
    const created = await fetch(`${api.url}/flows`, {
      method: "POST",
      headers: { ...owner.headers, "content-type": "application/json" },
      body: JSON.stringify({ name: "plain", steps: [{ name: "s", subject: "transform", payload: { a: 1 } }] }),
    });
    const flowId = ((await created.json()) as { data: { id: string } }).data.id;
    const started = await fetch(`${api.url}/flows/${flowId}/runs`, {
      method: "POST",
      headers: { ...owner.headers, "content-type": "application/json" },
      body: "{}",
    });
    const runId = ((await started.json()) as { run_id: string }).run_id;
    const run = (await (await fetch(`${api.url}/runs/${runId}`, { headers: owner.headers })).json()) as {
      trace_id: string | null;
    };
    expect(run.trace_id).toBeNull();
  });

  test("one trace of the run, linked to the caller's span but not in its trace (link, the default)", async () => {
    traceHere();
    const owner = await newCaller(api, "tracing");
    const { traceId, spans } = await tracedRun(
      api.url,
      owner.headers,
      `http://127.0.0.1:${upstream.server.port}`,
      receiver,
    );
    expect(traceId).not.toBe(CALLER_TRACE);
    const accept = named(spans, "accept webhook");
    expect(accept.parentSpanId).toBe("");
    expect(accept.links).toEqual([{ traceId: CALLER_TRACE, spanId: CALLER_SPAN }]);
    expectRunTree(spans, upstream.traceparents, { api: "platform-api", worker: "platform-api" });
    expect([...receiver.encodings]).toEqual(["application/json"]);
  }, 60_000);

  test("a replay is a trace of its own, begun by its acceptance", async () => {
    traceHere();
    const owner = await newCaller(api, "tracing-replay");
    const flow = await fetch(`${api.url}/flows`, {
      method: "POST",
      headers: { ...owner.headers, "content-type": "application/json" },
      body: JSON.stringify({ name: "again", steps: [{ name: "s", subject: "transform", payload: { a: 1 } }] }),
    });
    const flowId = ((await flow.json()) as { data: { id: string } }).data.id;
    const post = async (path: string) =>
      (
        (await (
          await fetch(`${api.url}${path}`, {
            method: "POST",
            headers: { ...owner.headers, "content-type": "application/json" },
            body: "{}",
          })
        ).json()) as {
          run_id: string;
        }
      ).run_id;
    const first = await post(`/flows/${flowId}/runs`);
    const replay = await post(`/runs/${first}/replay`);
    const traceOf = async (id: string) =>
      ((await (await fetch(`${api.url}/runs/${id}`, { headers: owner.headers })).json()) as { trace_id: string })
        .trace_id;
    const [original, again] = [await traceOf(first), await traceOf(replay)];
    expect(again).toMatch(/^[0-9a-f]{32}$/);
    expect(again).not.toBe(original);
    await eventually(() => receiver.trace(again).some((span) => span.name === "run"), 30_000);
    expect(named(receiver.trace(again), "accept replay").parentSpanId).toBe("");
  }, 60_000);
});
