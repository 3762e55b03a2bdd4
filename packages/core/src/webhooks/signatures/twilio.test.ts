import { describe, expect, test } from "bun:test";
import {
  getExpectedBodyHash,
  getExpectedTwilioSignature,
  validateRequest,
  validateRequestWithBody,
} from "twilio/lib/webhooks/webhooks";
import { verifyWebhookSignature } from "./index.ts";
import { delivery, PAYLOAD, TAMPERED, WEBHOOK_URL } from "./test-requests.ts";

const authToken = "12345678901234567890123456789012";
const config = { service: "twilio", secret: authToken } as const;
const FORM = { "Content-Type": "application/x-www-form-urlencoded" };

/** An incoming MMS as Twilio posts it: a name sent twice, one value repeated, non-ASCII text. */
const params = {
  MessageSid: "MM1f4e0b1f9ac2e1c5",
  From: "+14158675310",
  To: "+14155552671",
  Body: "Grüße & 👋 from Zoë",
  MediaUrl: ["https://api.twilio.com/m/2", "https://api.twilio.com/m/1", "https://api.twilio.com/m/2"],
  AccountSid: "AC00000000000000000000000000000000",
};
const formBody = new URLSearchParams(
  Object.entries(params).flatMap(([name, value]) =>
    (Array.isArray(value) ? value : [value]).map((v): [string, string] => [name, v]),
  ),
).toString();
const url = `${WEBHOOK_URL}?campaign=spring&lang=de`;

const check = (headers: Record<string, string>, body: string, at = url) =>
  verifyWebhookSignature(config, delivery(headers, body, at));

describe("Twilio signatures", () => {
  test("a form delivery signed by Twilio's library is accepted, as Twilio's validateRequest accepts it", () => {
    const signature = getExpectedTwilioSignature(authToken, url, params);
    expect(validateRequest(authToken, signature, url, params)).toBe(true);
    expect(check({ ...FORM, "X-Twilio-Signature": signature }, formBody)).toEqual({ ok: true });
  });

  test("the URL may have been signed with or without the scheme's default port", () => {
    const withPort = url.replace("hooks.example.com", "hooks.example.com:443");
    expect(
      check({ ...FORM, "X-Twilio-Signature": getExpectedTwilioSignature(authToken, withPort, params) }, formBody),
    ).toEqual({
      ok: true,
    });
    expect(
      check({ ...FORM, "X-Twilio-Signature": getExpectedTwilioSignature(authToken, url, params) }, formBody, withPort),
    ).toEqual({ ok: true });
    const elsewhere = url.replace("hooks.example.com", "hooks.example.com:8443");
    expect(
      check({ ...FORM, "X-Twilio-Signature": getExpectedTwilioSignature(authToken, elsewhere, params) }, formBody),
    ).toMatchObject({ reason: "mismatch" });
  });

  test("another token, another URL, or a parameter changed after signing, is a mismatch", () => {
    const mismatch = {
      ok: false,
      reason: "mismatch",
      message: "X-Twilio-Signature does not match the payload",
    } as const;
    const signature = getExpectedTwilioSignature(authToken, url, params);
    expect(
      check({ ...FORM, "X-Twilio-Signature": getExpectedTwilioSignature("f".repeat(32), url, params) }, formBody),
    ).toEqual(mismatch);
    expect(
      check({ ...FORM, "X-Twilio-Signature": signature }, formBody, `${WEBHOOK_URL}?campaign=autumn&lang=de`),
    ).toEqual(mismatch);
    expect(
      check({ ...FORM, "X-Twilio-Signature": signature }, formBody.replace("spring", "x").replace("Zo", "Jo")),
    ).toEqual(mismatch);
    expect(check({ ...FORM, "X-Twilio-Signature": signature }, `${formBody}&Extra=1`)).toEqual(mismatch);
  });

  test("a JSON body is signed through bodySHA256 in the URL, as validateRequestWithBody checks it", () => {
    const signedUrl = `${WEBHOOK_URL}?bodySHA256=${getExpectedBodyHash(PAYLOAD)}`;
    const signature = getExpectedTwilioSignature(authToken, signedUrl, {});
    expect(validateRequestWithBody(authToken, signature, signedUrl, PAYLOAD)).toBe(true);
    const json = { "Content-Type": "application/json", "X-Twilio-Signature": signature };
    expect(check(json, PAYLOAD, signedUrl)).toEqual({ ok: true });
    expect(check(json, TAMPERED, signedUrl)).toEqual({
      ok: false,
      reason: "mismatch",
      message: "bodySHA256 does not match the body",
    });
    const forgedUrl = `${WEBHOOK_URL}?bodySHA256=${getExpectedBodyHash(TAMPERED)}`;
    expect(check(json, TAMPERED, forgedUrl)).toMatchObject({ reason: "mismatch" });
  });

  test("a body that is not a form, signed through the bare URL, is refused: its bytes were never signed", () => {
    // What a captured signature of the URL alone would let anyone send: any JSON or multipart body.
    const signature = getExpectedTwilioSignature(authToken, WEBHOOK_URL, {});
    const refused = {
      ok: false,
      reason: "mismatch",
      message: "a Twilio delivery that is not form-encoded must carry bodySHA256 in its URL",
    } as const;
    for (const type of ["application/json", "multipart/form-data; boundary=x", "text/plain"]) {
      expect(check({ "Content-Type": type, "X-Twilio-Signature": signature }, PAYLOAD, WEBHOOK_URL)).toEqual(refused);
    }
    // An empty form (a status callback with no parameters) is the URL alone, as Twilio signs it.
    expect(check({ ...FORM, "X-Twilio-Signature": signature }, "", WEBHOOK_URL)).toEqual({ ok: true });
  });

  test("a missing header is reported; one that is not a base64 HMAC-SHA1 is malformed", () => {
    expect(check(FORM, formBody)).toEqual({
      ok: false,
      reason: "missing_header",
      message: "missing X-Twilio-Signature header",
    });
    const malformed = {
      ok: false,
      reason: "malformed_header",
      message: "X-Twilio-Signature header is not a base64 HMAC-SHA1",
    } as const;
    expect(check({ ...FORM, "X-Twilio-Signature": "sha1=abc" }, formBody)).toEqual(malformed);
    const sha256 = Buffer.alloc(32).toString("base64");
    expect(check({ ...FORM, "X-Twilio-Signature": sha256 }, formBody)).toEqual(malformed);
  });
});
