import { describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import type { HmacConfig } from "../schemas.ts";
import { verifyWebhookSignature } from "./index.ts";
import { delivery, NOW_S, PAYLOAD, TAMPERED } from "./test-requests.ts";

const secret = "a shared secret for a home-grown sender";
const check = (hmac: HmacConfig, headers: Record<string, string>, body = PAYLOAD) =>
  verifyWebhookSignature({ service: "custom", secret, hmac }, delivery(headers, body));
const digest = (algorithm: string, encoding: "hex" | "base64", content: string, key = secret) =>
  createHmac(algorithm, key).update(content).digest(encoding);

describe("custom HMAC signatures", () => {
  test("every algorithm and encoding verifies the raw body; hex in either case", () => {
    for (const algorithm of ["sha1", "sha256", "sha512"] as const) {
      for (const encoding of ["hex", "base64"] as const) {
        const hmac = { header: "X-Signature", algorithm, encoding };
        expect(check(hmac, { "X-Signature": digest(algorithm, encoding, PAYLOAD) })).toEqual({ ok: true });
      }
    }
    const hex = { header: "X-Signature", algorithm: "sha256", encoding: "hex" } as const;
    expect(check(hex, { "X-Signature": digest("sha256", "hex", PAYLOAD).toUpperCase() })).toEqual({ ok: true });
  });

  test("a prefix is required when configured", () => {
    const hmac = { header: "X-Hook-Sig", algorithm: "sha256", encoding: "hex", prefix: "sha256=" } as const;
    expect(check(hmac, { "X-Hook-Sig": `sha256=${digest("sha256", "hex", PAYLOAD)}` })).toEqual({ ok: true });
    expect(check(hmac, { "X-Hook-Sig": digest("sha256", "hex", PAYLOAD) })).toEqual({
      ok: false,
      reason: "malformed_header",
      message: "X-Hook-Sig header is not sha256=<hex sha256 signature>",
    });
  });

  test("another secret, another algorithm, or a body changed after signing, is a mismatch or malformed", () => {
    const hmac = { header: "X-Signature", algorithm: "sha512", encoding: "base64" } as const;
    const mismatch = { ok: false, reason: "mismatch", message: "X-Signature does not match the payload" } as const;
    expect(check(hmac, { "X-Signature": digest("sha512", "base64", PAYLOAD, "other") })).toEqual(mismatch);
    expect(check(hmac, { "X-Signature": digest("sha512", "base64", PAYLOAD) }, TAMPERED)).toEqual(mismatch);
    expect(check(hmac, { "X-Signature": digest("sha256", "base64", PAYLOAD) })).toEqual({
      ok: false,
      reason: "malformed_header",
      message: "X-Signature header is not <base64 sha512 signature>",
    });
    expect(check(hmac, {})).toEqual({ ok: false, reason: "missing_header", message: "missing X-Signature header" });
  });

  test("with a timestamp header, <timestamp>.<body> is signed and the tolerance applies", () => {
    const hmac = {
      header: "X-Signature",
      algorithm: "sha256",
      encoding: "hex",
      timestamp_header: "X-Timestamp",
      tolerance_s: 60,
    } as const;
    const signedAt = (timestamp: number) => ({
      "X-Timestamp": String(timestamp),
      "X-Signature": digest("sha256", "hex", `${timestamp}.${PAYLOAD}`),
    });
    expect(check(hmac, signedAt(NOW_S - 60))).toEqual({ ok: true });
    expect(check(hmac, signedAt(NOW_S - 61))).toEqual({
      ok: false,
      reason: "stale_timestamp",
      message: "X-Timestamp is more than 60 seconds away from now",
    });
    expect(check({ ...hmac, tolerance_s: undefined }, signedAt(NOW_S - 299))).toEqual({ ok: true });
    expect(check({ ...hmac, tolerance_s: undefined }, signedAt(NOW_S + 301))).toMatchObject({
      reason: "stale_timestamp",
    });
    expect(check(hmac, { "X-Signature": digest("sha256", "hex", PAYLOAD) })).toEqual({
      ok: false,
      reason: "missing_header",
      message: "missing X-Timestamp header",
    });
    expect(check(hmac, { ...signedAt(NOW_S), "X-Timestamp": "yesterday" })).toEqual({
      ok: false,
      reason: "malformed_header",
      message: "X-Timestamp header is not a Unix time in seconds",
    });
    expect(check(hmac, { ...signedAt(NOW_S), "X-Timestamp": String(NOW_S - 1) })).toMatchObject({ reason: "mismatch" });
    expect(check(hmac, signedAt(NOW_S), TAMPERED)).toMatchObject({ reason: "mismatch" });
  });
});
