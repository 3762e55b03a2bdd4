import { describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { verifyWebhookSignature } from "./index.ts";
import { delivery, PAYLOAD, TAMPERED } from "./test-requests.ts";

const secret = "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";
const config = { service: "shopify", secret } as const;
const shopifyHmac = (body: string, key = secret) => createHmac("sha256", key).update(body, "utf8").digest("base64");
const check = (hmac: string | undefined, body = PAYLOAD) =>
  verifyWebhookSignature(config, delivery(hmac ? { "X-Shopify-Hmac-Sha256": hmac } : {}, body));

describe("Shopify signatures", () => {
  test("a base64 HMAC-SHA256 of the raw body is accepted", () => {
    expect(check(shopifyHmac(PAYLOAD))).toEqual({ ok: true });
  });

  test("another secret, or a body changed after signing, is a mismatch", () => {
    const mismatch = {
      ok: false,
      reason: "mismatch",
      message: "X-Shopify-Hmac-Sha256 does not match the payload",
    } as const;
    expect(check(shopifyHmac(PAYLOAD, "another"))).toEqual(mismatch);
    expect(check(shopifyHmac(PAYLOAD), TAMPERED)).toEqual(mismatch);
  });

  test("a missing header is reported; hex, or base64 of the wrong length, is malformed", () => {
    expect(check(undefined)).toEqual({
      ok: false,
      reason: "missing_header",
      message: "missing X-Shopify-Hmac-Sha256 header",
    });
    const malformed = {
      ok: false,
      reason: "malformed_header",
      message: "X-Shopify-Hmac-Sha256 header is not a base64 HMAC-SHA256",
    } as const;
    expect(check(createHmac("sha256", secret).update(PAYLOAD).digest("hex"))).toEqual(malformed);
    expect(check(createHmac("sha1", secret).update(PAYLOAD).digest("base64"))).toEqual(malformed);
    expect(check("not base64!")).toEqual(malformed);
  });
});
