import { describe, expect, test } from "bun:test";
import { sign } from "@octokit/webhooks-methods";
import { verifyWebhookSignature } from "./index.ts";
import { delivery, PAYLOAD, TAMPERED } from "./test-requests.ts";

const secret = "It's a Secret to Everybody";
const config = { service: "github", secret } as const;
const check = (signature: string | undefined, body = PAYLOAD) =>
  verifyWebhookSignature(config, delivery(signature ? { "X-Hub-Signature-256": signature } : {}, body));

describe("GitHub signatures", () => {
  test("a delivery signed by Octokit's sign() is accepted", async () => {
    expect(check(await sign(secret, PAYLOAD))).toEqual({ ok: true });
  });

  test("another secret, or a body changed after signing, is a mismatch", async () => {
    const mismatch = {
      ok: false,
      reason: "mismatch",
      message: "X-Hub-Signature-256 does not match the payload",
    } as const;
    expect(check(await sign("another secret", PAYLOAD))).toEqual(mismatch);
    expect(check(await sign(secret, PAYLOAD), TAMPERED)).toEqual(mismatch);
  });

  test("a missing header is reported; one without sha256= or a full hex digest is malformed", async () => {
    expect(check(undefined)).toEqual({
      ok: false,
      reason: "missing_header",
      message: "missing X-Hub-Signature-256 header",
    });
    const digest = (await sign(secret, PAYLOAD)).slice("sha256=".length);
    const malformed = {
      ok: false,
      reason: "malformed_header",
      message: "X-Hub-Signature-256 header is not sha256=<hex signature>",
    } as const;
    expect(check(digest)).toEqual(malformed);
    expect(check(`sha1=${digest}`)).toEqual(malformed);
    expect(check(`sha256=${digest.slice(2)}`)).toEqual(malformed);
    expect(check(`sha256=${digest.slice(1)}g`)).toEqual(malformed);
  });
});
