import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { bearer, readBody, signUp } from "./accounts-helpers.ts";
import { createFlow } from "./context.ts";
import { createGateway, mapRoute } from "./gateway-helpers.ts";
import { runModes, startPeerApi, startTestApi, type TestApi } from "./harness.ts";

const MISSING = { error: "The requested resource does not exist" };

/** A flow that answers what the gateway handed it, through a `respond` step. */
const echoSteps = [
  {
    name: "reply",
    subject: "respond",
    payload: {
      status: 201,
      headers: { "x-order": "{{trigger.params.id}}", "content-type": "application/json" },
      body: {
        method: "{{trigger.method}}",
        path: "{{trigger.path}}",
        query: "{{trigger.query}}",
        params: "{{trigger.params}}",
        custom: "{{trigger.headers.x-custom}}",
        qty: "{{trigger.qty}}",
        gateway: "{{trigger.gateway}}",
      },
    },
  },
];

for (const { backend, redis, label, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(`gateway requests on ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;
    let owner: Record<string, string>;
    let accountId: string;
    beforeAll(async () => {
      api = await startTestApi({ backend, redis, worker: true, env: { WEBHOOK_MAX_BYTES: "65536" } });
      const { auth } = await signUp(api, "gw-traffic");
      owner = bearer(auth.auth_token);
      accountId = auth.account.id;
    }, 60_000);
    afterAll(() => api.stop());

    const send = (topic: string, path: string, init: RequestInit & { json?: unknown } = {}) =>
      api.request(`/gw/${topic}${path}`, init);
    const expectAnswer = async (response: Promise<Response>, status: number, body: unknown) => {
      const answered = await response;
      expect({ status: answered.status, body: await readBody(answered) }).toEqual({ status, body });
    };
    const runsOf = async (flowId: string) =>
      (await readBody(await api.request(`/flows/${flowId}/runs?limit=100`, { headers: owner }))).data;

    test("a mapped request runs its flow with method, path, query, headers, params and body, and answers with the respond step", async () => {
      const echo = await createFlow(api, { headers: owner }, echoSteps);
      const plain = await createFlow(api, { headers: owner }, [
        { name: "first", subject: "transform", payload: { step: 1 } },
        { name: "last", subject: "transform", payload: { form: "{{trigger.note}}", path: "{{trigger.path}}" } },
      ]);
      const topic = await createGateway(api, owner, { subject: "shop-api" });
      await mapRoute(api, owner, topic, "POST", "/orders/:id", echo);
      await mapRoute(api, owner, topic, "POST", "/orders/new", plain);
      await mapRoute(api, owner, topic, "GET", "/", plain);

      const response = await send(topic, "/orders/A%2042?tag=a&tag=b&one=1", {
        method: "POST",
        headers: { "X-Custom": "Yes" },
        json: { qty: 3, method: "forged" },
      });
      expect(response.status).toBe(201);
      expect(response.headers.get("x-order")).toBe("A 42");
      expect(await readBody(response)).toEqual({
        method: "POST",
        path: "/orders/A%2042",
        query: { tag: ["a", "b"], one: "1" },
        params: { id: "A 42" },
        custom: "Yes",
        qty: 3,
        gateway: "shop-api",
      });

      // A literal segment wins over a parameter; without a respond step the last output is the answer.
      const form = await send(topic, "/orders/new", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: "note=hello+there",
      });
      expect(form.status).toBe(200);
      expect(await readBody(form)).toEqual({ form: "hello there", path: "/orders/new" });
      await expectAnswer(send(topic, ""), 200, { form: null, path: "/" });

      // Each call is a run of its flow, with the trigger data it was given.
      const runs = await runsOf(echo);
      expect(runs).toHaveLength(1);
      const run = await readBody(await api.request(`/runs/${runs[0].id}`, { headers: owner }));
      expect(run).toMatchObject({
        status: "succeeded",
        trigger: {
          method: "POST",
          path: "/orders/A%2042",
          params: { id: "A 42" },
          qty: 3,
          headers: expect.objectContaining({ "x-custom": "Yes", "content-type": "application/json" }),
        },
      });
      expect(await runsOf(plain)).toHaveLength(2);
      // Prometheus names the route by its template, never by the gateway or its path.
      const metrics = await (await api.request("/metrics")).text();
      expect(metrics).toContain('route="/gw/{gateway_topic}"');
      expect(metrics).not.toContain("shop-api");
    });

    test("what matches no live gateway or mapping is 404, an inactive gateway 503, bodies as the webhook ingress reads them", async () => {
      const flow = await createFlow(api, { headers: owner });
      const topic = await createGateway(api, owner, {});
      await mapRoute(api, owner, topic, "PUT", "/items/:id", flow);

      await expectAnswer(send("no-such-gateway", "/items/1", { method: "PUT" }), 404, MISSING);
      await expectAnswer(send(topic, "/items/1", { method: "GET" }), 404, { error: "no mapping for GET /items/1" });
      await expectAnswer(send(topic, "/items", { method: "PUT" }), 404, { error: "no mapping for PUT /items" });
      await expectAnswer(send(topic, "/items/1", { method: "PUT" }), 200, { ok: true });

      const bodies: [RequestInit, number, string | Record<string, unknown>][] = [
        [{ body: "{oops", headers: { "content-type": "application/json" } }, 400, "body is not valid JSON"],
        [
          { body: "note=caf%E9", headers: { "content-type": "application/x-www-form-urlencoded" } },
          400,
          {
            error: "invalid input: body.note: must be valid UTF-8",
            problems: [{ path: "note", message: "must be valid UTF-8" }],
          },
        ],
        [
          { body: "plain words", headers: { "content-type": "text/plain" } },
          415,
          "content type text/plain is not accepted: send application/json, application/x-www-form-urlencoded or multipart/form-data",
        ],
        [
          { body: JSON.stringify({ big: "x".repeat(70_000) }), headers: { "content-type": "application/json" } },
          413,
          "request body exceeds 65536 bytes",
        ],
      ];
      for (const [init, status, answer] of bodies) {
        const body = typeof answer === "string" ? { error: answer } : answer;
        await expectAnswer(send(topic, "/items/1", { method: "PUT", ...init }), status, body);
      }

      const patch = (body: unknown) =>
        api.request(`/gateway/${topic}`, { method: "PATCH", headers: owner, json: body });
      expect((await patch({ active: false })).status).toBe(200);
      await expectAnswer(send(topic, "/items/1", { method: "PUT" }), 503, { error: "this gateway is inactive" });
      expect((await patch({ active: true })).status).toBe(200);
      await expectAnswer(send(topic, "/items/1", { method: "PUT" }), 200, { ok: true });

      const unmap = await api.request(`/gateway/${topic}/mapping/details?method=PUT&path=%2Fitems%2F%3Aid`, {
        method: "DELETE",
        headers: owner,
      });
      expect(unmap.status).toBe(200);
      await expectAnswer(send(topic, "/items/1", { method: "PUT" }), 404, { error: "no mapping for PUT /items/1" });
      await mapRoute(api, owner, topic, "PUT", "/items/:id", flow);
      expect((await api.request(`/gateway/${topic}`, { method: "DELETE", headers: owner })).status).toBe(200);
      await expectAnswer(send(topic, "/items/1", { method: "PUT" }), 404, MISSING);
    });

    test("a failed run answers 500 that the flow failed, with its run id (the account reads why); a mapped flow deleted since answers 404", async () => {
      const failing = await createFlow(api, { headers: owner }, [
        { name: "read", subject: "kv.get", payload: { bucket: "no-such-bucket", key: "k" } },
      ]);
      const topic = await createGateway(api, owner, {});
      await mapRoute(api, owner, topic, "POST", "/fail", failing);
      const response = await send(topic, "/fail", { method: "POST" });
      const body = await readBody(response);
      expect(response.status).toBe(500);
      expect(body).toEqual({ error: "the flow failed", run_id: expect.any(String) });
      const run = await readBody(await api.request(`/runs/${body.run_id}`, { headers: owner }));
      expect(run).toMatchObject({
        id: body.run_id,
        flow_id: failing,
        status: "failed",
        error: 'step "read" failed: bucket not found',
      });

      expect((await api.request(`/flows/${failing}`, { method: "DELETE", headers: owner })).status).toBe(200);
      await expectAnswer(send(topic, "/fail", { method: "POST" }), 404, { error: "the mapped flow does not exist" });
    });

    test("past the gateway's timeout the answer is 504 with the run id, and the run goes on to its end", async () => {
      const slow = await createFlow(api, { headers: owner }, [
        { name: "wait", subject: "delay", payload: { ms: 1500 } },
        { name: "reply", subject: "respond", payload: { body: "late" } },
      ]);
      const topic = await createGateway(api, owner, { timeout: 200 });
      await mapRoute(api, owner, topic, "GET", "/slow", slow);
      const response = await send(topic, "/slow");
      const body = await readBody(response);
      expect({ status: response.status, body }).toEqual({
        status: 504,
        body: { error: "the flow did not finish within 200 ms", run_id: expect.any(String) },
      });
      for (;;) {
        const run = await readBody(await api.request(`/runs/${body.run_id}`, { headers: owner }));
        expect(run.id).toBe(body.run_id);
        if (run.status === "succeeded") {
          expect(run.output).toEqual({ status: 200, headers: {}, body: "late" });
          break;
        }
        expect(["queued", "running"]).toContain(run.status);
        await Bun.sleep(50);
      }
    });

    test("the limit is exact across two API processes; beyond it 429 with Retry-After", async () => {
      const reply = await createFlow(api, { headers: owner }, [
        { name: "reply", subject: "respond", payload: { body: "ok" } },
      ]);
      const topic = await createGateway(api, owner, { limit: { request: 7, time: 3600 } });
      await mapRoute(api, owner, topic, "GET", "/ping", reply);
      const before = await api.services.metrics.read(accountId, "gateway.requests");
      const peer = await startPeerApi(api);
      try {
        const responses = await Promise.all(
          Array.from({ length: 30 }, (_, i) => (i % 2 === 0 ? api : peer).request(`/gw/${topic}/ping`)),
        );
        const statuses = responses.map((response) => response.status);
        expect(statuses.filter((status) => status === 200)).toHaveLength(7);
        expect(statuses.filter((status) => status === 429)).toHaveLength(23);
        for (const response of responses) {
          if (response.status === 200) {
            expect(await response.text()).toBe("ok");
            continue;
          }
          expect(await readBody(response)).toEqual({ error: "rate limit exceeded: at most 7 requests in 3600 s" });
          const retryAfter = Number(response.headers.get("retry-after"));
          expect(retryAfter).toBeGreaterThanOrEqual(1);
          expect(retryAfter).toBeLessThanOrEqual(3600);
        }
        await peer.services.metrics.flush();
      } finally {
        await peer.stop();
      }
      expect(await runsOf(reply)).toHaveLength(7);
      expect(await api.services.metrics.read(accountId, "gateway.requests")).toBe(before + 30);
    });
  });
}
