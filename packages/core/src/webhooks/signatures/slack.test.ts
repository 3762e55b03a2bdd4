import { describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { verifyWebhookSignature } from "./index.ts";
import { delivery, NOW_S, PAYLOAD, TAMPERED } from "./test-requests.ts";

/** Slack's documented example secret; signatures made by hand, as Slack's docs describe. */
const secret = "8f742231b10e8888abcd99yyyzzz85a5";
const config = { service: "slack", secret } as const;
const slackSignature = (timestamp: string, body: string, key = secret) =>
  `v0=${createHmac("sha256", key).update(`v0:${timestamp}:${body}`).digest("hex")}`;

const check = (headers: Record<string, string>, body = PAYLOAD) =>
  verifyWebhookSignature(config, delivery(headers, body));
const signed = (timestamp: number, options: { body?: string; key?: string } = {}) => ({
  "X-Slack-Request-Timestamp": String(timestamp),
  "X-Slack-Signature": slackSignature(String(timestamp), options.body ?? PAYLOAD, options.key),
});

describe("Slack signatures", () => {
  test("a delivery signed over v0:<timestamp>:<body> is accepted, URL verification included", () => {
    expect(check(signed(NOW_S - 1))).toEqual({ ok: true });
    const challenge = '{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","challenge":"3eZbrw1aB","type":"url_verification"}';
    expect(check(signed(NOW_S, { body: challenge }), challenge)).toEqual({ ok: true });
  });

  test("another secret, or a body changed after signing, is a mismatch", () => {
    const mismatch = {
      ok: false,
      reason: "mismatch",
      message: "X-Slack-Signature does not match the payload",
    } as const;
    expect(check(signed(NOW_S, { key: "another" }))).toEqual(mismatch);
    expect(check(signed(NOW_S), TAMPERED)).toEqual(mismatch);
    const headers = signed(NOW_S);
    expect(check({ ...headers, "X-Slack-Request-Timestamp": String(NOW_S - 1) })).toEqual(mismatch);
  });

  test("a timestamp more than 300 s away is stale, even with a good signature", () => {
    const stale = {
      ok: false,
      reason: "stale_timestamp",
      message: "X-Slack-Request-Timestamp is more than 300 seconds away from now",
    } as const;
    expect(check(signed(NOW_S - 301))).toEqual(stale);
    expect(check(signed(NOW_S + 400))).toEqual(stale);
  });

  test("either header missing is reported by name", () => {
    const headers = signed(NOW_S);
    expect(check({ "X-Slack-Request-Timestamp": headers["X-Slack-Request-Timestamp"] })).toEqual({
      ok: false,
      reason: "missing_header",
      message: "missing X-Slack-Signature header",
    });
    expect(check({ "X-Slack-Signature": headers["X-Slack-Signature"] })).toEqual({
      ok: false,
      reason: "missing_header",
      message: "missing X-Slack-Request-Timestamp header",
    });
  });

  test("a signature without v0= or a timestamp that is no Unix time is malformed", () => {
    const headers = signed(NOW_S);
    expect(check({ ...headers, "X-Slack-Signature": headers["X-Slack-Signature"].slice(3) })).toEqual({
      ok: false,
      reason: "malformed_header",
      message: "X-Slack-Signature header is not v0=<hex signature>",
    });
    expect(check({ ...headers, "X-Slack-Request-Timestamp": "2026-03-01T12:00:00Z" })).toEqual({
      ok: false,
      reason: "malformed_header",
      message: "X-Slack-Request-Timestamp header is not a Unix time in seconds",
    });
  });
});
