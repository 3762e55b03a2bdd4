import { describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { MAX_INDEXED_KEY_LENGTH } from "../indexed-key.ts";
import { MAX_EVENT_TYPE_LENGTH, slackUrlVerification, webhookDeliveryId, webhookEventType } from "./events.ts";

const parts = (headers: Record<string, string>, body: Record<string, unknown>) => ({
  headers: new Headers(headers),
  body,
});

/** One realistic delivery per sender: where each puts its event type and its delivery id. */
const deliveries = {
  stripe: parts(
    { "Stripe-Signature": "t=1,v1=00" },
    { id: "evt_1NqS2x", object: "event", type: "invoice.paid", data: { object: { id: "in_1" } } },
  ),
  github: parts(
    { "X-GitHub-Event": "pull_request", "X-GitHub-Delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958" },
    { action: "opened", number: 1, type: "ignored" },
  ),
  slackEvent: parts({}, { type: "event_callback", event_id: "Ev08MFMKH6", event: { type: "app_mention", text: "hi" } }),
  slackCommand: parts({}, { type: "block_actions", trigger_id: "1" }),
  shopify: parts(
    { "X-Shopify-Topic": "orders/create", "X-Shopify-Webhook-Id": "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043" },
    { id: 820982911946154500, type: "ignored" },
  ),
  twilio: parts(
    { "I-Twilio-Idempotency-Token": "9a5f2ef6-1f4b-4f3b-9d8f-5e5b4c3a2a1b" },
    { MessageSid: "SM1", MessageStatus: "delivered", EventType: "x" },
  ),
  standard: parts({ "webhook-id": "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W" }, { type: "user.created", data: { id: "u1" } }),
  svix: parts({ "svix-id": "msg_svix" }, { type: "user.deleted" }),
  custom: parts({}, { event: "build.finished", type: "secondary", data: { id: 42, attempt: "3" } }),
};

describe("event types per service", () => {
  test("each service's event type is read where it puts it", () => {
    expect(webhookEventType("stripe", deliveries.stripe)).toBe("invoice.paid");
    expect(webhookEventType("github", deliveries.github)).toBe("pull_request");
    expect(webhookEventType("slack", deliveries.slackEvent)).toBe("app_mention");
    expect(webhookEventType("slack", deliveries.slackCommand)).toBe("block_actions");
    expect(webhookEventType("shopify", deliveries.shopify)).toBe("orders/create");
    expect(webhookEventType("standard", deliveries.standard)).toBe("user.created");
    expect(webhookEventType("custom", deliveries.custom)).toBe("build.finished");
    expect(webhookEventType(null, deliveries.custom)).toBe("build.finished");
    expect(webhookEventType(undefined, deliveries.standard)).toBe("user.created");
  });

  test("no event type is null: a header-based service ignores the body, strings only, bounded", () => {
    expect(webhookEventType("twilio", deliveries.twilio)).toBeNull();
    expect(webhookEventType("github", parts({}, { type: "push" }))).toBeNull();
    expect(webhookEventType("stripe", parts({}, { type: { nested: true } }))).toBeNull();
    expect(webhookEventType(null, parts({}, { event: "" }))).toBeNull();
    expect(webhookEventType(null, parts({}, { event: "e".repeat(MAX_EVENT_TYPE_LENGTH) }))).toHaveLength(200);
    expect(webhookEventType(null, parts({}, { event: "e".repeat(MAX_EVENT_TYPE_LENGTH + 1) }))).toBeNull();
    expect(webhookEventType("slack", parts({}, { event: "text", type: "constructor" }))).toBe("constructor");
    expect(webhookEventType("slack", parts({}, { event: "text" }))).toBeNull();
  });
});

describe("delivery ids per service", () => {
  test("each service's delivery id is read where it puts it", () => {
    expect(webhookDeliveryId("stripe", deliveries.stripe)).toBe("evt_1NqS2x");
    expect(webhookDeliveryId("github", deliveries.github)).toBe("72d3162e-cc78-11e3-81ab-4c9367dc0958");
    expect(webhookDeliveryId("slack", deliveries.slackEvent)).toBe("Ev08MFMKH6");
    expect(webhookDeliveryId("shopify", deliveries.shopify)).toBe("b54557e4-bdd9-4b37-8a5f-bf7d70bcd043");
    expect(webhookDeliveryId("twilio", deliveries.twilio)).toBe("9a5f2ef6-1f4b-4f3b-9d8f-5e5b4c3a2a1b");
    expect(webhookDeliveryId("standard", deliveries.standard)).toBe("msg_2KWPBgLlAfxdpx2AI54pPJ85f4W");
    expect(webhookDeliveryId("standard", deliveries.svix)).toBe("msg_svix");
  });

  test("without one of the service's own, the configured body field is used; numbers read as text", () => {
    expect(webhookDeliveryId("custom", deliveries.custom)).toBeNull();
    expect(webhookDeliveryId("custom", deliveries.custom, "data.id")).toBe("42");
    expect(webhookDeliveryId(null, deliveries.custom, "data.attempt")).toBe("3");
    expect(webhookDeliveryId("slack", deliveries.slackCommand, "trigger_id")).toBe("1");
    expect(webhookDeliveryId("github", parts({ "X-GitHub-Delivery": "d-1" }, { id: "x" }), "id")).toBe("d-1");
    expect(webhookDeliveryId(null, deliveries.custom, "data.missing")).toBeNull();
    expect(webhookDeliveryId(null, deliveries.custom, "data.id.deeper")).toBeNull();
    expect(webhookDeliveryId(null, parts({}, { id: "x" }), "constructor")).toBeNull();
  });

  test("a long id is replaced by its SHA-256, so de-duplication keys stay bounded", () => {
    const long = "i".repeat(MAX_INDEXED_KEY_LENGTH + 1);
    const hashed = `sha256:${createHash("sha256").update(long).digest("hex")}`;
    expect(webhookDeliveryId("github", parts({ "X-GitHub-Delivery": long }, {}))).toBe(hashed);
    expect(webhookDeliveryId("stripe", parts({}, { id: "i".repeat(MAX_INDEXED_KEY_LENGTH) }))).toHaveLength(200);
  });
});

describe("Slack URL verification", () => {
  const challenge = {
    token: "Jhj5dZrVaK7ZwHHjRyZWjbDl",
    challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P",
    type: "url_verification",
  };

  test("a Slack trigger answers the challenge it was sent", () => {
    expect(slackUrlVerification("slack", challenge)).toEqual({ challenge: challenge.challenge });
  });

  test("other services, other Slack events and a challenge-less body get no answer", () => {
    expect(slackUrlVerification("custom", challenge)).toBeNull();
    expect(slackUrlVerification(null, challenge)).toBeNull();
    expect(slackUrlVerification("slack", deliveries.slackEvent.body)).toBeNull();
    expect(slackUrlVerification("slack", { type: "url_verification" })).toBeNull();
  });
});
