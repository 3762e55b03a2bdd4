import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bearer, readBody, signUp } from "./accounts-helpers.ts";
import { runModes, startPeerApi, startTestApi, type TestApi } from "./harness.ts";

/**
 * Per-account limits on what accounts share, by plan (PLAN_LIMITS_FILE): bytes kept in
 * KV and streams, messages per stream, runs started per minute, webhook deliveries per
 * second per flow. Tiny limits for the free plan make each easy to reach.
 */
const FREE = {
  kv_bytes: 60,
  stream_bytes: 100,
  stream_messages: 3,
  runs_per_minute: 10,
  webhook_deliveries_per_second: 3,
};

function planLimitsFile(): string {
  const file = join(mkdtempSync(join(tmpdir(), "plan-limits-")), "limits.json");
  writeFileSync(file, JSON.stringify({ free: FREE }));
  return file;
}

const STEPS = [{ name: "s", subject: "transform", payload: {} }];

for (const { backend, redis, label, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(`account limits on ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;
    beforeAll(async () => {
      api = await startTestApi({ backend, redis, worker: true, env: { PLAN_LIMITS_FILE: planLimitsFile() } });
    }, 60_000);
    afterAll(() => api.stop());

    async function account(tag: string) {
      const { auth } = await signUp(api, tag);
      const headers = bearer(auth.auth_token);
      const call = async (method: string, path: string, json?: unknown) => {
        const response = await api.request(path, { method, headers, json });
        return {
          status: response.status,
          retryAfter: response.headers.get("retry-after"),
          body: await readBody(response),
        };
      };
      return { headers, call };
    }

    const usageOf = async (call: Awaited<ReturnType<typeof account>>["call"]) =>
      Object.fromEntries(
        ((await call("GET", "/accounts/usage")).body.data.limits as { name: string; used: number }[]).map((limit) => [
          limit.name,
          limit.used,
        ]),
      );

    test("KV bytes: a write that would pass the plan's limit is 413 naming it; replacing and deleting give bytes back", async () => {
      const { call } = await account("kv-limit");
      expect((await call("PUT", "/storage/kv/b", { description: "" })).status).toBe(200);
      // Each key counts its name and its value's JSON: "k1" + '"0123456789"' is 14 bytes.
      for (const key of ["k1", "k2", "k3", "k4"]) {
        expect((await call("PUT", `/storage/kv/b/keys/${key}`, { value: "0123456789" })).status).toBe(200);
      }
      const refused = await call("PUT", "/storage/kv/b/keys/k5", { value: "0123456789" });
      expect(refused).toEqual({
        status: 413,
        retryAfter: null,
        body: { error: "payload_too_large", limit: { name: "kv_bytes", limit: 60, used: 56, plan: "free" } },
      });
      expect((await call("GET", "/storage/kv/b/keys/k5")).status).toBe(404);
      expect((await usageOf(call)).kv_bytes).toBe(56);
      // A smaller value fits where a new key does not; a deleted key frees its bytes.
      expect((await call("PUT", "/storage/kv/b/keys/k1", { value: 1 })).status).toBe(200);
      expect((await call("DELETE", "/storage/kv/b/keys/k2")).status).toBe(200);
      expect((await usageOf(call)).kv_bytes).toBe(56 - 11 - 14);
      expect((await call("PUT", "/storage/kv/b/keys/k5", { value: "0123456789" })).status).toBe(200);

      // Another account of the same plan is not touched by this one being full.
      const other = await account("kv-other");
      await other.call("PUT", "/storage/kv/b", { description: "" });
      expect((await other.call("PUT", "/storage/kv/b/keys/k1", { value: "0123456789" })).status).toBe(200);
    });

    test("streams: bytes kept, and messages one stream keeps, each refused past the plan's limit", async () => {
      const { call } = await account("stream-limit");
      const publish = (stream: string, body: unknown) =>
        call("POST", `/storage/streams/${stream}/messages`, { stream, subject: "s", body });
      expect((await call("PUT", "/storage/streams/kept", {})).status).toBe(200);
      for (let n = 0; n < 3; n++) expect((await publish("kept", { n })).status).toBe(200);
      const full = await publish("kept", { n: 3 });
      expect(full.status).toBe(409);
      expect(full.body.limit).toEqual({ name: "stream_messages", limit: 3, used: 3, plan: "free" });
      expect(full.body.error).toBe("conflict");
      // A stream that keeps fewer messages drops its oldest instead.
      expect((await call("PUT", "/storage/streams/rolling", { max_messages: 2 })).status).toBe(200);
      for (let n = 0; n < 5; n++) expect((await publish("rolling", { n })).status).toBe(200);
      expect((await call("PUT", "/storage/streams/wide", { max_messages: 4 })).status).toBe(409);
      // Bytes: each message is "s\n" and its body; the 3 + 2 kept messages of "s\n{"n":0}" are 9 bytes each.
      const usage = await usageOf(call);
      expect(usage.stream_bytes).toBe(45);
      expect(usage.stream_messages).toBe(3);
      expect((await call("PUT", "/storage/streams/big", {})).status).toBe(200);
      const tooBig = await publish("big", { text: "x".repeat(50) });
      expect(tooBig.status).toBe(413);
      expect(tooBig.body.limit).toEqual({ name: "stream_bytes", limit: 100, used: 45, plan: "free" });
      // Deleting a stream frees what it kept.
      expect((await call("DELETE", "/storage/streams/kept")).status).toBe(200);
      expect((await usageOf(call)).stream_bytes).toBe(18);
    });

    test("runs started per minute, however they start: 429 with Retry-After past it", async () => {
      const { call } = await account("runs-limit");
      const flow = (await call("POST", "/flows", { name: "f", steps: STEPS })).body.data;
      const statuses: number[] = [];
      for (let n = 0; n < 9; n++) statuses.push((await call("POST", `/flows/${flow.id}/runs`, {})).status);
      const hook = await api.request(`/webhooks/${flow.webhook.id}`, { method: "POST", json: {} });
      expect(hook.status).toBe(200);
      const refused = await call("POST", `/flows/${flow.id}/runs`, {});
      expect(statuses).toEqual(Array(9).fill(200));
      expect(refused.status).toBe(429);
      expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(1);
      expect(refused.body).toEqual({
        error: "runs_per_minute is 10 on the free plan",
        limit: { name: "runs_per_minute", limit: 10, plan: "free" },
      });
      expect((await api.request(`/webhooks/${flow.webhook.id}`, { method: "POST", json: {} })).status).toBe(429);
      expect((await usageOf(call)).runs_per_minute).toBe(10);
    });

    test("webhook deliveries per second per flow: a burst past it is 429, nothing of it recorded", async () => {
      const { call } = await account("deliveries-limit");
      const flow = (await call("POST", "/flows", { name: "f", steps: STEPS })).body.data;
      const burst = await Promise.all(
        Array.from({ length: 6 }, () => api.request(`/webhooks/${flow.webhook.id}`, { method: "POST", json: {} })),
      );
      const statuses = burst.map((response) => response.status).sort();
      expect(statuses).toEqual([200, 200, 200, 429, 429, 429]);
      const refused = burst.find((response) => response.status === 429);
      expect(Number(refused?.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      const runs = (await call("GET", `/flows/${flow.id}/runs`)).body.data;
      expect(runs).toHaveLength(3);
      const usage = (await call("GET", "/accounts/usage")).body.data;
      expect(usage.plan).toBe("free");
      expect(usage.limits.find((limit: { name: string }) => limit.name === "webhook_deliveries_per_second")).toEqual({
        name: "webhook_deliveries_per_second",
        limit: 3,
        used: expect.any(Number),
        unit: "deliveries",
        per: "flow",
        of: flow.id,
      });
    });

    test("two API processes share one limit: 6 starts on each, 10 accepted", async () => {
      const peer = await startPeerApi(api);
      try {
        const { headers, call } = await account("two-processes");
        const flow = (await call("POST", "/flows", { name: "f", steps: STEPS })).body.data;
        const start = (server: TestApi) =>
          server.request(`/flows/${flow.id}/runs`, { method: "POST", headers, json: {} }).then((r) => r.status);
        const statuses = await Promise.all([
          ...Array.from({ length: 6 }, () => start(api)),
          ...Array.from({ length: 6 }, () => start(peer)),
        ]);
        expect(statuses.filter((status) => status === 200)).toHaveLength(10);
        expect(statuses.filter((status) => status === 429)).toHaveLength(2);
      } finally {
        await peer.stop();
      }
    });
  });
}
