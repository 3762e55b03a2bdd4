import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { AppRouter } from "@platform/core";
import { createTRPCClient, httpLink } from "@trpc/client";
import { bearer, readBody, signUp } from "./accounts-helpers.ts";
import { call, createFlow, newCaller, runUntil, startRun } from "./context.ts";
import { adapterVariants, runModes, startTestApi, type TestApi } from "./harness.ts";

const ALL_METRICS = [
  "webhooks.received",
  "webhooks.rejected",
  "runs.started",
  "runs.succeeded",
  "runs.failed",
  "runs.duration_ms.p50",
  "runs.duration_ms.p95",
  "schedules.refused",
  "gateway.requests",
  "stream.messages",
  "stream.bytes",
  "kv.keys",
];

for (const { backend, redis, label: name, skip } of adapterVariants()) {
  describe.skipIf(Boolean(skip))(`monitoring on ${name}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;
    beforeAll(async () => {
      api = await startTestApi({ backend, redis });
    }, 60_000);
    afterAll(() => api.stop());

    const current = (json: unknown, headers: Record<string, string> = {}) =>
      api.request("/monitoring/metrics/current", { method: "POST", headers, json });

    test("metrics are required: a missing or empty list, or no body at all, is 400 in the spec's shape", async () => {
      const account = (await signUp(api, "metrics-required")).auth.account.id;
      for (const body of [{ metrics: [], account }, { account }, {}]) {
        const response = await current(body);
        expect(response.status).toBe(400);
        expect(await readBody(response)).toEqual({ message: "metrics are required", data: null });
      }
      const empty = await api.request("/monitoring/metrics/current", { method: "POST" });
      expect(empty.status).toBe(400);
      expect(await readBody(empty)).toEqual({ message: "metrics are required", data: null });
    });

    test("without a credential, `account` names the account; counters start at zero and count what happened", async () => {
      const owner = await signUp(api, "metrics-anon");
      const account = owner.auth.account.id;
      const before = Date.now();
      const first = await current({ metrics: ALL_METRICS, account, stream: "orders" });
      expect(first.status).toBe(200);
      const { message, data } = await readBody(first);
      expect(message).toBe("success");
      expect(data).toHaveLength(ALL_METRICS.length);
      const byName = Object.fromEntries(ALL_METRICS.map((metric, i) => [metric, data[i]]));
      for (const metric of ALL_METRICS.filter((m) => !m.startsWith("runs.duration_ms."))) {
        expect(byName[metric]).toEqual({ ts: expect.any(Number), value: 0 });
        expect(byName[metric].ts).toBeGreaterThanOrEqual(before);
      }
      expect(byName["runs.duration_ms.p50"]).toEqual({ error: "no data" });
      expect(byName["runs.duration_ms.p95"]).toEqual({ error: "no data" });

      api.services.metrics.count(account, "runs.started", 3);
      api.services.metrics.countStream(account, "stream.messages", "orders", 2);
      api.services.metrics.countStream(account, "stream.messages", "audit", 7);
      const later = await readBody(
        await current({ metrics: ["runs.started", "stream.messages", "runs.failed"], account, stream: "orders" }),
      );
      expect(later.data.map((entry: { value?: number }) => entry.value)).toEqual([3, 2, 0]);
    });

    test("an unknown name, or a stream metric without `stream`, has no data; the rest still answer", async () => {
      const account = (await signUp(api, "metrics-unknown")).auth.account.id;
      const response = await current({ metrics: ["no.such.metric", "stream.bytes", "kv.keys"], account });
      expect(response.status).toBe(200);
      const { data } = await readBody(response);
      expect(data[0]).toEqual({ error: "no data" });
      expect(data[1]).toEqual({ error: "stream is required" });
      expect(data[2]).toEqual({ ts: expect.any(Number), value: 0 });
    });

    test("with a credential the caller's own account is read and `account` is ignored", async () => {
      const mine = await signUp(api, "metrics-mine");
      const theirs = await signUp(api, "metrics-theirs");
      api.services.metrics.count(mine.auth.account.id, "gateway.requests", 5);
      api.services.metrics.count(theirs.auth.account.id, "gateway.requests", 9);
      const response = await current(
        { metrics: ["gateway.requests"], account: theirs.auth.account.id },
        bearer(mine.auth.auth_token),
      );
      expect((await readBody(response)).data).toEqual([{ ts: expect.any(Number), value: 5 }]);
    });

    test("which account: missing, not an id, unknown, or a bad credential are refused in the spec's shape", async () => {
      // A 400 names the field as a problem too, beside the spec's two fields.
      const account = (message: string) => [{ path: "account", message }];
      const cases: [unknown, Record<string, string>, number, string, unknown][] = [
        [
          { metrics: ["kv.keys"] },
          {},
          400,
          "account is required without a credential",
          account("is required without a credential"),
        ],
        [
          { metrics: ["kv.keys"], account: "acme" },
          {},
          400,
          "invalid input: account: must be an account id (a UUID)",
          account("must be an account id (a UUID)"),
        ],
        [{ metrics: ["kv.keys"], account: crypto.randomUUID() }, {}, 404, "account not found", undefined],
        [{ metrics: ["kv.keys"] }, { authorization: "Bearer not-a-token" }, 401, "invalid credential", undefined],
      ];
      for (const [body, headers, status, message, problems] of cases) {
        const response = await current(body, headers);
        expect({ status: response.status, body: await readBody(response) }).toEqual({
          status,
          body: problems ? { message, data: null, problems } : { message, data: null },
        });
      }
    });

    test("GET /monitoring/metrics lists every name, and which ones need a stream", async () => {
      const response = await api.request("/monitoring/metrics");
      expect(response.status).toBe(200);
      const { message, data } = await readBody(response);
      expect(message).toBe("success");
      expect(data.map((metric: { name: string }) => metric.name)).toEqual(ALL_METRICS);
      expect(
        data.filter((metric: { needs_stream: boolean }) => metric.needs_stream).map((m: { name: string }) => m.name),
      ).toEqual(["stream.messages", "stream.bytes"]);
      for (const metric of data) expect(metric.description).toBeString();
    });

    test("a typed tRPC client reads the same metrics", async () => {
      const owner = await signUp(api, "metrics-trpc");
      api.services.metrics.count(owner.auth.account.id, "webhooks.received", 4);
      const client = createTRPCClient<AppRouter>({
        links: [httpLink({ url: `${api.url}/trpc`, headers: bearer(owner.auth.auth_token) })],
      });
      const answer = await client.monitoring.current.mutate({ metrics: ["webhooks.received"] });
      expect(answer).toEqual({ message: "success", data: [{ ts: expect.any(Number), value: 4 }] });
      expect((await client.monitoring.list.query()).data).toHaveLength(ALL_METRICS.length);
    });
  });
}

for (const { backend, redis, label, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(`run duration percentiles, ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;
    beforeAll(async () => {
      api = await startTestApi({ backend, redis, worker: true });
    }, 60_000);
    afterAll(() => api.stop());

    const percentiles = async (headers: Record<string, string>) =>
      (
        await call(api, { headers }, "POST", "/monitoring/metrics/current", {
          metrics: ["runs.duration_ms.p50", "runs.duration_ms.p95"],
        })
      ).body.data;

    test("p50 and p95 are the durations of the account's ended runs, as each run's duration_ms counts them", async () => {
      const owner = await newCaller(api, "metrics-durations");
      const other = await newCaller(api, "metrics-durations-other");
      expect(await percentiles(owner.headers)).toEqual([{ error: "no data" }, { error: "no data" }]);

      const flowId = await createFlow(api, owner, [{ name: "shape", subject: "transform", payload: { ok: true } }]);
      const durations: number[] = [];
      for (let i = 0; i < 3; i++) {
        const started = await startRun(api, owner, flowId, { i });
        expect(started.status).toBe(200);
        durations.push((await runUntil(api, owner, started.body.run_id)).duration_ms);
      }
      const [fastest, middle, slowest] = durations.sort((a, b) => a - b) as [number, number, number];
      expect(fastest).toBeGreaterThanOrEqual(0);
      expect(await percentiles(owner.headers)).toEqual([
        { ts: expect.any(Number), value: middle },
        // Interpolated as percentile_cont does it, at position 0.95 × (3 − 1) between the
        // middle and the slowest: 0.95 × 2 − 1 is a hair under 0.9 in floating point.
        { ts: expect.any(Number), value: Math.round(middle + (0.95 * 2 - 1) * (slowest - middle)) },
      ]);
      expect(await percentiles(other.headers)).toEqual([{ error: "no data" }, { error: "no data" }]);
    });
  });
}

describe("monitoring with METRICS_REQUIRE_AUTH=true", () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi({ backend: "pglite", env: { METRICS_REQUIRE_AUTH: "true" } });
  }, 60_000);
  afterAll(() => api.stop());

  test("anonymous callers get 401; a credential still reads its own account", async () => {
    const owner = await signUp(api, "metrics-auth");
    const anonymous = await api.request("/monitoring/metrics/current", {
      method: "POST",
      json: { metrics: ["kv.keys"], account: owner.auth.account.id },
    });
    expect(anonymous.status).toBe(401);
    expect(await readBody(anonymous)).toEqual({ message: "missing credential", data: null });
    const listing = await api.request("/monitoring/metrics");
    expect(listing.status).toBe(401);
    expect(await readBody(listing)).toEqual({ message: "missing credential", data: null });

    const signedIn = await api.request("/monitoring/metrics/current", {
      method: "POST",
      headers: bearer(owner.auth.auth_token),
      json: { metrics: ["kv.keys"] },
    });
    expect(signedIn.status).toBe(200);
    expect((await readBody(signedIn)).data).toEqual([{ ts: expect.any(Number), value: 0 }]);
  });
});
