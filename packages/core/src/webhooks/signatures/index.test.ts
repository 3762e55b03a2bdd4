import { describe, expect, test } from "bun:test";
import { type SignatureConfig, verifyWebhookSignature } from "./index.ts";
import { delivery, PAYLOAD } from "./test-requests.ts";

const configs: SignatureConfig[] = [
  { service: "stripe", secret: "whsec_abc" },
  { service: "github", secret: "s" },
  { service: "slack", secret: "s" },
  { service: "shopify", secret: "s" },
  { service: "twilio", secret: "s" },
  { service: "standard", secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" },
  {
    service: "custom",
    secret: "s",
    hmac: { header: "X-Signature", algorithm: "sha256", encoding: "base64", prefix: "v1=", timestamp_header: "X-Ts" },
  },
];

const SIGNATURE_HEADERS = [
  "Stripe-Signature",
  "X-Hub-Signature-256",
  "X-Slack-Signature",
  "X-Shopify-Hmac-Sha256",
  "X-Twilio-Signature",
  "webhook-signature",
  "X-Signature",
];

/** Header values a hostile or broken sender might send. */
const GARBAGE = [
  "=",
  ",,,",
  "t=,v1=",
  "t=1,v1=,v1==",
  "sha256=",
  "v0=",
  "v1,",
  "v1=AAAA",
  "=====",
  "\u00e9\u00ff latin-1 bytes",
  "a".repeat(8000),
  `t=1,${"v1=00,".repeat(500)}`,
  "v1,!!!! v1,????",
];

describe("the signature entry point", () => {
  test("refuses whatever a sender puts in the headers, with a reason, and never throws", () => {
    for (const config of configs) {
      for (const value of GARBAGE) {
        const headers: Record<string, string> = {
          "X-Slack-Request-Timestamp": value,
          "webhook-id": value,
          "webhook-timestamp": value,
          "X-Ts": value,
          "content-type": "application/x-www-form-urlencoded",
        };
        for (const name of SIGNATURE_HEADERS) headers[name] = value;
        const check = verifyWebhookSignature(config, delivery(headers, PAYLOAD, `https://h.example/${value}`));
        expect(check.ok).toBe(false);
        if (!check.ok) expect(["malformed_header", "mismatch"]).toContain(check.reason);
      }
    }
  });

  test("refuses an unsigned delivery of every service as missing its header", () => {
    for (const config of configs) {
      expect(verifyWebhookSignature(config, delivery({}, PAYLOAD))).toMatchObject({
        ok: false,
        reason: "missing_header",
      });
    }
  });
});
