import { describe, expect, test } from "bun:test";
import Stripe from "stripe";
import { verifyWebhookSignature } from "./index.ts";
import { delivery, NOW, NOW_S, PAYLOAD, TAMPERED } from "./test-requests.ts";

const stripe = new Stripe("sk_test_not_used_for_signing");
const secret = "whsec_4eC39HqLyjWDarjtT1zdp7dcXq2Kz9Fm";
const config = { service: "stripe", secret } as const;

/** A Stripe-Signature header made by Stripe's own library. */
const header = (options: { payload?: string; secret?: string; timestamp?: number } = {}) =>
  stripe.webhooks.generateTestHeaderStringAsync({
    payload: options.payload ?? PAYLOAD,
    secret: options.secret ?? secret,
    timestamp: options.timestamp ?? NOW_S - 10,
  });

const check = async (stripeSignature: string | undefined, body = PAYLOAD) =>
  verifyWebhookSignature(config, delivery(stripeSignature ? { "Stripe-Signature": stripeSignature } : {}, body));

describe("Stripe signatures", () => {
  test("a delivery signed by Stripe's library is accepted, as Stripe's own verifier accepts it", async () => {
    const signature = await header();
    expect(await check(signature)).toEqual({ ok: true });
    const event = await stripe.webhooks.constructEventAsync(PAYLOAD, signature, secret, 300, undefined, NOW.getTime());
    expect(event.type).toBe("payment_intent.succeeded");
  });

  test("another secret, or a body changed after signing, is a mismatch", async () => {
    const mismatch = { ok: false, reason: "mismatch", message: "Stripe-Signature does not match the payload" } as const;
    expect(await check(await header({ secret: "whsec_someoneElse0000000000000000" }))).toEqual(mismatch);
    expect(await check(await header(), TAMPERED)).toEqual(mismatch);
  });

  test("a timestamp more than 300 s old, or ahead, is stale; 300 s is still fine", async () => {
    const stale = {
      ok: false,
      reason: "stale_timestamp",
      message: "Stripe-Signature is more than 300 seconds away from now",
    } as const;
    expect(await check(await header({ timestamp: NOW_S - 301 }))).toEqual(stale);
    expect(await check(await header({ timestamp: NOW_S + 301 }))).toEqual(stale);
    expect(await check(await header({ timestamp: NOW_S - 300 }))).toEqual({ ok: true });
  });

  test("a missing or empty header is reported as missing", async () => {
    const missing = { ok: false, reason: "missing_header", message: "missing Stripe-Signature header" } as const;
    expect(await check(undefined)).toEqual(missing);
    expect(await check("  ")).toEqual(missing);
  });

  test("a header without t, without v1, with two t or with no hex signature is malformed", async () => {
    const signature = await header();
    const v1 = signature.split(",")[1] as string;
    const malformed = {
      ok: false,
      reason: "malformed_header",
      message: "Stripe-Signature header is not t=<timestamp>,v1=<hex signature>",
    } as const;
    expect(await check(v1)).toEqual(malformed);
    expect(await check(`t=${NOW_S}`)).toEqual(malformed);
    expect(await check(`t=${NOW_S},t=${NOW_S},${v1}`)).toEqual(malformed);
    expect(await check(`t=soon,${v1}`)).toEqual(malformed);
    expect(await check(`t=${NOW_S},v1=not-hex`)).toEqual(malformed);
    expect(await check(`t=${NOW_S},v1=abcd`)).toEqual(malformed);
  });

  test("while a secret rolls, any of several v1 may match; other schemes are ignored", async () => {
    const timestamp = NOW_S - 5;
    const current = await header({ timestamp });
    const previous = await header({ timestamp, secret: "whsec_previousSecret00000000000" });
    const oldV1 = previous.split(",")[1];
    const newV1 = current.split(",")[1];
    expect(await check(`t=${timestamp},${oldV1},${newV1},v0=deadbeef`)).toEqual({ ok: true });
    expect(await check(`t=${timestamp},v0=${newV1?.slice(3)},${oldV1}`)).toMatchObject({ reason: "mismatch" });
    expect(await check(`t=${timestamp}, v1=zz , ${newV1}`)).toEqual({ ok: true });
  });
});
