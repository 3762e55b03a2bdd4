import { describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { verifyWebhookSignature } from "./index.ts";
import { delivery, NOW, NOW_S, PAYLOAD, TAMPERED } from "./test-requests.ts";

const secret = `whsec_${randomBytes(32).toString("base64")}`;
const config = { service: "standard", secret } as const;
const id = "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W";

/** The three headers as a Standard Webhooks sender sets them, signed by the reference library. */
function headersFor(options: { secret?: string; timestamp?: number; body?: string; family?: string } = {}) {
  const timestamp = options.timestamp ?? NOW_S - 3;
  const family = options.family ?? "webhook";
  return {
    [`${family}-id`]: id,
    [`${family}-timestamp`]: String(timestamp),
    [`${family}-signature`]: new Webhook(options.secret ?? secret).sign(
      id,
      new Date(timestamp * 1000),
      options.body ?? PAYLOAD,
    ),
  };
}

const check = (headers: Record<string, string>, body = PAYLOAD) =>
  verifyWebhookSignature(config, delivery(headers, body));

describe("Standard Webhooks signatures", () => {
  test("a delivery signed by the standardwebhooks library is accepted, as its own verify accepts it", () => {
    const headers = headersFor({ timestamp: Math.floor(Date.now() / 1000) });
    expect(new Webhook(secret).verify(PAYLOAD, headers)).toEqual(JSON.parse(PAYLOAD));
    const received = delivery(headers, PAYLOAD);
    expect(verifyWebhookSignature(config, { ...received, now: new Date() })).toEqual({ ok: true });
    expect(check(headersFor())).toEqual({ ok: true });
  });

  test("Svix's svix-* headers are read when webhook-* are absent", () => {
    expect(check(headersFor({ family: "svix" }))).toEqual({ ok: true });
  });

  test("another secret, or a body changed after signing, is a mismatch", () => {
    const mismatch = {
      ok: false,
      reason: "mismatch",
      message: "webhook-signature does not match the payload",
    } as const;
    expect(check(headersFor({ secret: `whsec_${randomBytes(32).toString("base64")}` }))).toEqual(mismatch);
    expect(check(headersFor(), TAMPERED)).toEqual(mismatch);
    expect(check({ ...headersFor(), "webhook-id": "msg_other" })).toEqual(mismatch);
  });

  test("a timestamp more than 300 s old or ahead is stale", () => {
    const stale = {
      ok: false,
      reason: "stale_timestamp",
      message: "webhook-timestamp is more than 300 seconds away from now",
    } as const;
    expect(check(headersFor({ timestamp: NOW_S - 301 }))).toEqual(stale);
    expect(check(headersFor({ timestamp: NOW_S + 301 }))).toEqual(stale);
  });

  test("several signatures while a secret rotates: one v1 match is enough, other versions are ignored", () => {
    const headers = headersFor();
    const previous = headersFor({ secret: `whsec_${randomBytes(24).toString("base64")}` })["webhook-signature"];
    const rotated = `v1a,${randomBytes(64).toString("base64")} ${previous} ${headers["webhook-signature"]}`;
    expect(check({ ...headers, "webhook-signature": rotated })).toEqual({ ok: true });
    expect(check({ ...headers, "webhook-signature": `v1a,${String(headers["webhook-signature"]).slice(3)}` })).toEqual({
      ok: false,
      reason: "malformed_header",
      message: "webhook-signature header is not v1,<base64 signature>",
    });
  });

  test("each missing header is named; a timestamp or signature in the wrong form is malformed", () => {
    const headers = headersFor();
    for (const name of ["webhook-id", "webhook-timestamp", "webhook-signature"]) {
      const { [name]: _left, ...others } = headers;
      expect(check(others)).toEqual({ ok: false, reason: "missing_header", message: `missing ${name} header` });
    }
    expect(check({ ...headers, "webhook-timestamp": NOW.toISOString() })).toEqual({
      ok: false,
      reason: "malformed_header",
      message: "webhook-timestamp header is not a Unix time in seconds",
    });
    expect(check({ ...headers, "webhook-signature": String(headers["webhook-signature"]).slice(3) })).toMatchObject({
      reason: "malformed_header",
    });
  });
});
