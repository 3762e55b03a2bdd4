import { describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import Stripe from "stripe";
import { getExpectedTwilioSignature } from "twilio/lib/webhooks/webhooks";
import {
  buildWebhookTriggerData,
  parseWebhookBody,
  readWebhookBody,
  type SignatureConfig,
  slackUrlVerification,
  verifyWebhookSignature,
  webhookDeliveryId,
  webhookEventType,
} from "./index.ts";

const LIMITS = { maxBytes: 64 * 1024, maxFileContentBytes: 1024 };
const PUBLIC_URL = "https://hooks.example.com/webhooks/wh_3f9a";

/** What the ingress route will do with a delivery, in its order, from a real Request. */
async function ingest(request: Request, config: SignatureConfig) {
  const raw = await readWebhookBody(request, LIMITS.maxBytes);
  const receivedAt = new Date();
  const check = verifyWebhookSignature(config, {
    headers: request.headers,
    rawBody: raw,
    url: PUBLIC_URL,
    now: receivedAt,
  });
  if (!check.ok) return { check };
  const { fields } = await parseWebhookBody(raw, request.headers.get("content-type"), LIMITS);
  const parts = { headers: request.headers, body: fields };
  return {
    check,
    challenge: slackUrlVerification(config.service, fields),
    eventType: webhookEventType(config.service, parts),
    deliveryId: webhookDeliveryId(config.service, parts),
    data: buildWebhookTriggerData({ body: fields, headers: request.headers, webhookId: "wh_3f9a", receivedAt }),
  };
}

describe("a delivery through every step the ingress takes", () => {
  test("Stripe: signed JSON becomes an event type, a delivery id and trigger data", async () => {
    const secret = "whsec_4eC39HqLyjWDarjtT1zdp7dc";
    const payload = JSON.stringify({ id: "evt_9", type: "charge.refunded", data: { object: { id: "ch_1" } } });
    const signature = await new Stripe("sk_test_x").webhooks.generateTestHeaderStringAsync({ payload, secret });
    const request = new Request("http://internal:3000/webhooks/wh_3f9a", {
      method: "POST",
      headers: { "Content-Type": "application/json", "Stripe-Signature": signature },
      body: payload,
    });
    const result = await ingest(request, { service: "stripe", secret });
    expect(result).toMatchObject({
      check: { ok: true },
      challenge: null,
      eventType: "charge.refunded",
      deliveryId: "evt_9",
    });
    expect(result.data).toMatchObject({
      id: "evt_9",
      data: { object: { id: "ch_1" } },
      headers: { "content-type": "application/json", "stripe-signature": signature },
      webhook_id: "wh_3f9a",
    });
  });

  test("Twilio: a signed form, checked against the public URL rather than the internal one", async () => {
    const authToken = "12345678901234567890123456789012";
    const form = new URLSearchParams({ MessageSid: "SM1", Body: "hi", From: "+14158675310" });
    const signature = getExpectedTwilioSignature(authToken, PUBLIC_URL, Object.fromEntries(form));
    const request = new Request("http://internal:3000/webhooks/wh_3f9a", {
      method: "POST",
      headers: {
        "X-Twilio-Signature": signature,
        "I-Twilio-Idempotency-Token": "idem-1",
        "Content-Type": "application/x-www-form-urlencoded",
      },
      body: form.toString(),
    });
    const result = await ingest(request, { service: "twilio", secret: authToken });
    expect(result).toMatchObject({ check: { ok: true }, deliveryId: "idem-1", eventType: null });
    expect(result.data).toMatchObject({ MessageSid: "SM1", Body: "hi", From: "+14158675310" });
  });

  test("Slack: a signed URL verification is answered with its challenge; a forged one is refused first", async () => {
    const secret = "8f742231b10e8888abcd99yyyzzz85a5";
    const body = JSON.stringify({ type: "url_verification", challenge: "c-123", token: "t" });
    const timestamp = String(Math.floor(Date.now() / 1000));
    const slackRequest = (signature: string) =>
      new Request("http://internal:3000/webhooks/wh_3f9a", {
        method: "POST",
        headers: {
          "Content-Type": "application/json",
          "X-Slack-Request-Timestamp": timestamp,
          "X-Slack-Signature": signature,
        },
        body,
      });
    const signed = `v0=${createHmac("sha256", secret).update(`v0:${timestamp}:${body}`).digest("hex")}`;
    expect(await ingest(slackRequest(signed), { service: "slack", secret })).toMatchObject({
      check: { ok: true },
      challenge: { challenge: "c-123" },
      eventType: "url_verification",
    });
    expect(await ingest(slackRequest(`v0=${"0".repeat(64)}`), { service: "slack", secret })).toEqual({
      check: { ok: false, reason: "mismatch", message: "X-Slack-Signature does not match the payload" },
    });
  });
});
