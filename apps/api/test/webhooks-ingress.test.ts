import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash, createHmac } from "node:crypto";
import { sign as signGithub } from "@octokit/webhooks-methods";
import { deliveryWindowJob } from "@platform/core";
import { Webhook as StandardWebhook } from "standardwebhooks";
import Stripe from "stripe";
import { getExpectedTwilioSignature } from "twilio/lib/webhooks/webhooks";
import { bearer, signUp } from "./accounts-helpers.ts";
import { type Caller, call, runUntil } from "./context.ts";
import { type FlowBody, type FlowsClient, flowsClient } from "./flows-helpers.ts";
import { pastOneHostVariants, runModes, startTestApi, type TestApi } from "./harness.ts";

/** The public address senders sign (Twilio signs the whole URL); the test reaches the server on its own port. */
const WEBHOOK_BASE_URL = "https://hooks.example.com/in";
const MAX_BYTES = 64 * 1024;
const STRIPE_SECRET = "whsec_4eC39HqLyjWDarjtT1zdp7dc";
const stripe = new Stripe("sk_test_x");

/** One transform step that echoes what the trigger carried. */
const ECHO_STEPS = [{ name: "echo", subject: "transform", payload: { trigger: "{{trigger}}" } }];

function flowWith(trigger: Record<string, unknown>, steps: unknown[] = ECHO_STEPS) {
  return { name: `ingress ${crypto.randomUUID().slice(0, 8)}`, trigger: { type: "webhook", ...trigger }, steps };
}

for (const { backend, redis, label, skip } of [...runModes(), ...(await pastOneHostVariants())]) {
  describe.skipIf(Boolean(skip))(`webhook ingress on ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;
    let owner: Caller;
    let flows: FlowsClient;
    beforeAll(async () => {
      api = await startTestApi({
        backend,
        redis,
        worker: true,
        env: { WEBHOOK_BASE_URL, WEBHOOK_MAX_BYTES: String(MAX_BYTES), WAIT_TIMEOUT_MS: "5000" },
      });
      const { auth } = await signUp(api, "ingress");
      owner = { accountId: auth.account.id, headers: bearer(auth.auth_token) };
      flows = flowsClient(api, owner.headers);
    }, 60_000);
    afterAll(() => api.stop());

    const deliver = (flow: FlowBody, init: RequestInit & { json?: unknown }, query = "") =>
      api.request(`/webhooks/${flow.webhook.id}${query}`, { method: "POST", ...init });
    // biome-ignore lint/suspicious/noExplicitAny: the assertions that read a body are its type check
    const answer = async (response: Response): Promise<{ status: number; body: any }> => ({
      status: response.status,
      body: await response.json(),
    });
    const runsOf = async (flow: FlowBody) => (await call(api, owner, "GET", `/flows/${flow.id}/runs`)).body.data;

    describe("addressing", () => {
      test("only POST starts a flow: other methods are 405 with Allow", async () => {
        const flow = await flows.created(flowWith({}));
        const response = await api.request(`/webhooks/${flow.webhook.id}`, { method: "GET" });
        expect(response.status).toBe(405);
        expect(response.headers.get("allow")).toBe("POST");
        expect(await response.json()).toEqual({ error: "webhooks accept POST only" });
      });

      test("an unknown, inactive, deleted or regenerated-away webhook id is 404 and starts nothing", async () => {
        const notFound = { status: 404, body: { error: "webhook not found" } };
        expect(await answer(await api.request("/webhooks/0123456789abcdef", { method: "POST", json: {} }))).toEqual(
          notFound,
        );

        const inactive = await flows.created({ ...flowWith({}), active: false });
        expect(await answer(await deliver(inactive, { json: { a: 1 } }))).toEqual(notFound);

        const deleted = await flows.created(flowWith({}));
        expect((await deliver(deleted, { json: {} })).status).toBe(200);
        expect((await flows.remove(deleted.id)).status).toBe(200);
        expect(await answer(await deliver(deleted, { json: {} }))).toEqual(notFound);

        const regenerated = await flows.created(flowWith({}));
        expect((await deliver(regenerated, { json: {} })).status).toBe(200);
        const renewed = (await answer(await flows.regenerate(regenerated.id))).body.data;
        expect(await answer(await deliver(regenerated, { json: {} }))).toEqual(notFound);
        expect((await deliver(renewed, { json: {} })).status).toBe(200);
        expect(await runsOf(inactive)).toEqual([]);
      });
    });

    describe("bodies", () => {
      test("JSON, form and multipart bodies become trigger data; the run sees headers, webhook_id and received_at", async () => {
        const flow = await flows.created(flowWith({}));
        const sent = await deliver(flow, {
          json: { order: { id: "o-1", total: 42 } },
          headers: { "X-Source": "shop" },
        });
        const accepted = await answer(sent);
        expect(accepted).toEqual({ status: 200, body: { message: "accepted", run_id: expect.any(String) } });
        const run = await runUntil(api, owner, accepted.body.run_id);
        expect(run.status).toBe("succeeded");
        expect(run.trigger).toMatchObject({
          order: { id: "o-1", total: 42 },
          headers: { "x-source": "shop", "content-type": "application/json" },
          webhook_id: flow.webhook.id,
          received_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        });

        const form = await answer(
          await deliver(flow, {
            body: "name=Ada&tag=a&tag=b",
            headers: { "content-type": "application/x-www-form-urlencoded" },
          }),
        );
        expect((await runUntil(api, owner, form.body.run_id)).trigger).toMatchObject({ name: "Ada", tag: ["a", "b"] });

        const multipart = new FormData();
        multipart.set("note", "hello");
        multipart.set("file", new File(["file content"], "a.txt", { type: "text/plain" }));
        const upload = await answer(await deliver(flow, { body: multipart }));
        const uploaded = await runUntil(api, owner, upload.body.run_id);
        expect(uploaded.trigger).toMatchObject({
          note: "hello",
          file: { name: "a.txt", type: expect.stringContaining("text/plain"), size: 12, sha256: expect.any(String) },
        });
      });

      test("form and multipart text that is not UTF-8 is a 400 naming the field, as JSON's is, never stored changed", async () => {
        const flow = await flows.created(flowWith({}));
        const form = { "content-type": "application/x-www-form-urlencoded" };
        const latin1 = Buffer.from([0x63, 0x61, 0x66, 0xe9]); // `caf<0xE9>`
        // The text names the body's field as it always has; the problem names the field itself.
        const notUtf8 = {
          status: 400,
          body: {
            error: "invalid input: body.note: must be valid UTF-8",
            problems: [{ path: "note", message: "must be valid UTF-8" }],
          },
        };
        expect(await answer(await deliver(flow, { body: "note=caf%E9", headers: form }))).toEqual(notUtf8);
        expect(
          await answer(await deliver(flow, { body: Buffer.concat([Buffer.from("note="), latin1]), headers: form })),
        ).toEqual(notUtf8);
        const multipart = Buffer.concat([
          Buffer.from('--b0und\r\nContent-Disposition: form-data; name="note"\r\n\r\n'),
          latin1,
          Buffer.from("\r\n--b0und--\r\n"),
        ]);
        expect(
          await answer(
            await deliver(flow, {
              body: multipart,
              headers: { "content-type": "multipart/form-data; boundary=b0und" },
            }),
          ),
        ).toEqual(notUtf8);
        // The same word in UTF-8 is taken as sent; the refused ones started nothing.
        const utf8 = await answer(await deliver(flow, { body: "note=caf%C3%A9", headers: form }));
        expect(utf8.status).toBe(200);
        expect((await runUntil(api, owner, utf8.body.run_id)).trigger.note).toBe("café");
        expect(await runsOf(flow)).toHaveLength(1);
      });

      test("another content type is 415, malformed JSON 400, a body over WEBHOOK_MAX_BYTES 413; none starts a run", async () => {
        const flow = await flows.created(flowWith({}));
        const text = await answer(await deliver(flow, { body: "hello", headers: { "content-type": "text/plain" } }));
        expect(text.status).toBe(415);
        expect(text.body.error).toContain("content type text/plain is not accepted");
        expect(
          await answer(await deliver(flow, { body: "{nope", headers: { "content-type": "application/json" } })),
        ).toEqual({ status: 400, body: { error: "body is not valid JSON" } });
        const big = await answer(await deliver(flow, { json: { blob: "x".repeat(MAX_BYTES) } }));
        expect(big).toEqual({ status: 413, body: { error: `request body exceeds ${MAX_BYTES} bytes` } });
        expect(await runsOf(flow)).toEqual([]);
      });
    });

    describe("access", () => {
      test("api_key: a key of the flow's account in X-Api-Key or ?api_key; the header stays out of the trigger data", async () => {
        const flow = await flows.created(flowWith({ access: "api_key" }));
        const key = (await call(api, owner, "POST", "/accounts/api-keys", { name: "hooks" })).body;
        const keyText = key.data?.key ?? key.key;
        expect(typeof keyText).toBe("string");
        const viaHeader = await answer(await deliver(flow, { json: { n: 1 }, headers: { "x-api-key": keyText } }));
        expect(viaHeader.status).toBe(200);
        expect((await runUntil(api, owner, viaHeader.body.run_id)).trigger.headers["x-api-key"]).toBeUndefined();
        const viaQuery = await deliver(flow, { json: { n: 2 } }, `?api_key=${encodeURIComponent(keyText)}`);
        expect(viaQuery.status).toBe(200);

        expect(await answer(await deliver(flow, { json: {} }))).toEqual({
          status: 401,
          body: { error: "missing API key: send it in X-Api-Key or the api_key query parameter" },
        });
        expect(await answer(await deliver(flow, { json: {}, headers: { "x-api-key": "pk_not_a_key" } }))).toEqual({
          status: 401,
          body: { error: "invalid API key" },
        });
        const stranger = await signUp(api, "ingress-stranger");
        const foreign = await call(api, { headers: bearer(stranger.auth.auth_token) }, "POST", "/accounts/api-keys", {
          name: "other",
        });
        const foreignKey = foreign.body.data?.key ?? foreign.body.key;
        expect((await deliver(flow, { json: {}, headers: { "x-api-key": foreignKey } })).status).toBe(401);
        const restricted = await call(api, owner, "POST", "/accounts/api-keys", {
          name: "users only",
          allowed_paths: ["/accounts/users"],
        });
        expect(
          await answer(await deliver(flow, { json: {}, headers: { "x-api-key": restricted.body.data.key } })),
        ).toEqual({ status: 401, body: { error: "this API key is not allowed on this path" } });
        expect(await runsOf(flow)).toHaveLength(2);
      });

      test("Stripe: a delivery signed by Stripe's library is taken; a forged one is 401, starts nothing and is counted", async () => {
        // An account of its own, so that its counters hold this test's deliveries only.
        const { auth } = await signUp(api, "ingress-stripe");
        const stripeOwner = { accountId: auth.account.id, headers: bearer(auth.auth_token) };
        const flow = await flowsClient(api, stripeOwner.headers).created(
          flowWith({ access: "signature", service: "stripe", signing_secret: STRIPE_SECRET }),
        );
        const payload = JSON.stringify({ id: "evt_1", type: "charge.succeeded", data: { object: { id: "ch_1" } } });
        const header = await stripe.webhooks.generateTestHeaderStringAsync({ payload, secret: STRIPE_SECRET });
        const signed = { "content-type": "application/json", "stripe-signature": header };
        expect((await deliver(flow, { body: payload, headers: signed })).status).toBe(200);

        const forgedHeader = await stripe.webhooks.generateTestHeaderStringAsync({
          payload,
          secret: "whsec_someoneElse000000000000000",
        });
        const forged = await answer(
          await deliver(flow, { body: payload, headers: { ...signed, "stripe-signature": forgedHeader } }),
        );
        expect(forged.status).toBe(401);
        expect(forged.body.error).toContain("Stripe-Signature");
        const unsigned = await answer(
          await deliver(flow, { body: payload, headers: { "content-type": "application/json" } }),
        );
        expect(unsigned).toEqual({ status: 401, body: { error: "missing Stripe-Signature header" } });
        expect((await call(api, stripeOwner, "GET", `/flows/${flow.id}/runs`)).body.data).toHaveLength(1);

        let rejected = 0;
        for (let i = 0; i < 100 && rejected < 2; i++) {
          const metrics = await call(api, stripeOwner, "POST", "/monitoring/metrics/current", {
            metrics: ["webhooks.received", "webhooks.rejected"],
          });
          // Answers in the order asked: [webhooks.received, webhooks.rejected].
          rejected = metrics.body.data[1]?.value ?? 0;
          if (rejected < 2) await Bun.sleep(50);
        }
        expect(rejected).toBe(2);
      });

      test("GitHub, Shopify, Slack, Standard Webhooks, Twilio and custom HMAC: signed is taken, tampered is 401", async () => {
        const secret = "It's a Secret to Everybody";
        const body = JSON.stringify({ action: "opened", number: 7 });
        const cases: {
          trigger: Record<string, unknown>;
          signed: () => Promise<Record<string, string>>;
          raw?: string;
          type?: string;
        }[] = [
          {
            trigger: { service: "github", signing_secret: secret },
            signed: async () => ({ "x-hub-signature-256": await signGithub(secret, body), "x-github-event": "issues" }),
          },
          {
            trigger: { service: "shopify", signing_secret: secret },
            signed: async () => ({
              "x-shopify-hmac-sha256": createHmac("sha256", secret).update(body).digest("base64"),
              "x-shopify-topic": "orders/create",
            }),
          },
          {
            trigger: { service: "slack", signing_secret: secret },
            signed: async () => {
              const ts = String(Math.floor(Date.now() / 1000));
              const signature = `v0=${createHmac("sha256", secret).update(`v0:${ts}:${body}`).digest("hex")}`;
              return { "x-slack-request-timestamp": ts, "x-slack-signature": signature };
            },
          },
          {
            trigger: { service: "standard", signing_secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" },
            signed: async () => {
              const id = `msg_${crypto.randomUUID()}`;
              const at = new Date();
              const signature = new StandardWebhook("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").sign(id, at, body);
              return {
                "webhook-id": id,
                "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
                "webhook-signature": signature,
              };
            },
          },
          {
            trigger: {
              service: "custom",
              signing_secret: secret,
              hmac: { header: "X-Signature", algorithm: "sha512", encoding: "hex", prefix: "sha512=" },
            },
            signed: async () => ({
              "x-signature": `sha512=${createHmac("sha512", secret).update(body).digest("hex")}`,
            }),
          },
        ];
        for (const { trigger, signed } of cases) {
          const flow = await flows.created(flowWith({ access: "signature", ...trigger }));
          const headers = { "content-type": "application/json", ...(await signed()) };
          const good = await deliver(flow, { body, headers });
          expect({ service: trigger.service, status: good.status }).toEqual({ service: trigger.service, status: 200 });
          const tampered = await deliver(flow, { body: body.replace("7", "8"), headers });
          expect({ service: trigger.service, status: tampered.status }).toEqual({
            service: trigger.service,
            status: 401,
          });
        }

        // Twilio signs the public URL and the sorted form parameters.
        const authToken = "12345678901234567890123456789012";
        const flow = await flows.created(
          flowWith({ access: "signature", service: "twilio", signing_secret: authToken }),
        );
        const form = { MessageSid: "SM1", Body: "hi", From: "+14158675310" };
        const signature = getExpectedTwilioSignature(authToken, `${WEBHOOK_BASE_URL}/${flow.webhook.id}`, form);
        const twilioHeaders = { "content-type": "application/x-www-form-urlencoded", "x-twilio-signature": signature };
        const ok = await deliver(flow, { body: new URLSearchParams(form).toString(), headers: twilioHeaders });
        expect(ok.status).toBe(200);
        const moved = await deliver(flow, {
          body: new URLSearchParams({ ...form, Body: "bye" }).toString(),
          headers: twilioHeaders,
        });
        expect(moved.status).toBe(401);

        // A JSON body signed through the URL alone would let anyone choose it: Twilio signs it with bodySHA256.
        const bareUrl = getExpectedTwilioSignature(authToken, `${WEBHOOK_BASE_URL}/${flow.webhook.id}`, {});
        const unsigned = await deliver(flow, {
          body: JSON.stringify({ Body: "anything at all" }),
          headers: { "content-type": "application/json", "x-twilio-signature": bareUrl },
        });
        expect(await answer(unsigned)).toEqual({
          status: 401,
          body: { error: "a Twilio delivery that is not form-encoded must carry bodySHA256 in its URL" },
        });
        const bodyHash = createHash("sha256").update('{"Body":"hi"}').digest("hex");
        const withHash = getExpectedTwilioSignature(
          authToken,
          `${WEBHOOK_BASE_URL}/${flow.webhook.id}?bodySHA256=${bodyHash}`,
          {},
        );
        const json = await deliver(
          flow,
          { body: '{"Body":"hi"}', headers: { "content-type": "application/json", "x-twilio-signature": withHash } },
          `?bodySHA256=${bodyHash}`,
        );
        expect(json.status).toBe(200);
      });

      test("a captured Stripe delivery posted again as a form is 415: services that post JSON take only JSON", async () => {
        const flow = await flows.created(
          flowWith({ access: "signature", service: "stripe", signing_secret: STRIPE_SECRET }),
        );
        const event = JSON.stringify({ id: "evt_replayed", type: "payment_intent.succeeded", data: {} });
        const signature = await stripe.webhooks.generateTestHeaderStringAsync({
          payload: event,
          secret: STRIPE_SECRET,
        });
        const first = await deliver(flow, {
          body: event,
          headers: { "content-type": "application/json", "stripe-signature": signature },
        });
        expect(first.status).toBe(200);
        for (const type of ["application/x-www-form-urlencoded", "text/plain", "multipart/form-data; boundary=x"]) {
          const replayed = await deliver(flow, {
            body: event,
            headers: { "content-type": type, "stripe-signature": signature },
          });
          expect({ type, ...(await answer(replayed)) }).toEqual({
            type,
            status: 415,
            body: { error: `stripe deliveries are JSON: content type ${type.split(";")[0]} is not accepted` },
          });
        }
        // The first delivery's run is the only one.
        expect((await runsOf(flow)).length).toBe(1);
      });

      test("Slack's URL verification is answered with its challenge, and starts nothing", async () => {
        const secret = "8f742231b10e8888abcd99yyyzzz85a5";
        const flow = await flows.created(flowWith({ access: "signature", service: "slack", signing_secret: secret }));
        const body = JSON.stringify({ type: "url_verification", challenge: "c-123", token: "t" });
        const ts = String(Math.floor(Date.now() / 1000));
        const signature = `v0=${createHmac("sha256", secret).update(`v0:${ts}:${body}`).digest("hex")}`;
        const response = await deliver(flow, {
          body,
          headers: {
            "content-type": "application/json",
            "x-slack-request-timestamp": ts,
            "x-slack-signature": signature,
          },
        });
        expect(await answer(response)).toEqual({ status: 200, body: { challenge: "c-123" } });
        expect(await runsOf(flow)).toEqual([]);
      });
    });

    describe("events and deliveries", () => {
      test("an event outside the filter is accepted with run_id null and recorded as filtered", async () => {
        const flow = await flows.created(flowWith({ events: ["order.paid"] }));
        const skipped = await answer(await deliver(flow, { json: { type: "order.refunded", id: "x" } }));
        expect(skipped).toEqual({ status: 200, body: { message: "accepted", run_id: null } });
        const taken = await answer(await deliver(flow, { json: { type: "order.paid", id: "y" } }));
        expect(taken.body.run_id).toEqual(expect.any(String));
        const runs = await runsOf(flow);
        const filtered = runs.filter((run: { status: string }) => run.status === "filtered");
        expect(filtered).toHaveLength(1);
        expect(runs.find((run: { id: string }) => run.id === taken.body.run_id)?.status).not.toBe("filtered");
      });

      test("a repeated delivery id starts no second run and is answered with the first run's id", async () => {
        const flow = await flows.created(
          flowWith({ access: "signature", service: "stripe", signing_secret: STRIPE_SECRET }),
        );
        const payload = JSON.stringify({ id: "evt_repeat", type: "charge.succeeded" });
        const deliverOnce = async () => {
          const header = await stripe.webhooks.generateTestHeaderStringAsync({ payload, secret: STRIPE_SECRET });
          return answer(
            await deliver(flow, {
              body: payload,
              headers: { "content-type": "application/json", "stripe-signature": header },
            }),
          );
        };
        const [first, second] = await Promise.all([deliverOnce(), deliverOnce()]);
        expect(first.status).toBe(200);
        expect(second).toEqual(first);
        expect(await runsOf(flow)).toHaveLength(1);
        expect(await deliverOnce()).toEqual(first);
      });

      test("a configured body field is the delivery id for senders that define none; a window of 0 turns it off", async () => {
        const keyed = await flows.created(flowWith({ delivery_id_field: "event.id" }));
        const a = await answer(await deliver(keyed, { json: { event: { id: "e-1" } } }));
        const b = await answer(await deliver(keyed, { json: { event: { id: "e-1" } } }));
        expect(b.body.run_id).toBe(a.body.run_id);
        const off = await flows.created(flowWith({ delivery_id_field: "event.id", dedup_window_s: 0 }));
        const c = await answer(await deliver(off, { json: { event: { id: "e-1" } } }));
        const d = await answer(await deliver(off, { json: { event: { id: "e-1" } } }));
        expect(c.body.run_id).not.toBe(d.body.run_id);
      });
      test("once the flow's window is over, the delivery id is forgotten and a repeat starts a new run", async () => {
        const flow = await flows.created(flowWith({ delivery_id_field: "id", dedup_window_s: 1 }));
        const first = await answer(await deliver(flow, { json: { id: "late-1" } }));
        expect((await answer(await deliver(flow, { json: { id: "late-1" } }))).body.run_id).toBe(first.body.run_id);
        await Bun.sleep(1100);
        await deliveryWindowJob(api.services).run({
          signal: new AbortController().signal,
          logger: api.services.logger,
        });
        const again = await answer(await deliver(flow, { json: { id: "late-1" } }));
        expect(again.status).toBe(200);
        expect(again.body.run_id).not.toBe(first.body.run_id);
      });
    });

    describe("wait mode", () => {
      test("answers the respond step's status, headers and body", async () => {
        const flow = await flows.created(
          flowWith({ response_mode: "wait" }, [
            {
              name: "reply",
              subject: "respond",
              payload: { status: 201, headers: { "x-order": "{{trigger.id}}" }, body: { got: "{{trigger.id}}" } },
            },
          ]),
        );
        const response = await deliver(flow, { json: { id: "o-9" } });
        expect(response.status).toBe(201);
        expect(response.headers.get("x-order")).toBe("o-9");
        expect(await response.json()).toEqual({ got: "o-9" });
      });

      test("a failed run answers 500 with its error and run id", async () => {
        const flow = await flows.created(
          flowWith({ response_mode: "wait" }, [
            { name: "read", subject: "kv.get", payload: { bucket: "nope", key: "k" } },
          ]),
        );
        const failed = await answer(await deliver(flow, { json: {} }));
        expect(failed.status).toBe(500);
        expect(failed.body).toEqual({ error: expect.any(String), run_id: expect.any(String) });
      });
    });
  });
}
