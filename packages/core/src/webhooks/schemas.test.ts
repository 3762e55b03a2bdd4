import { describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { z } from "zod";
import { deliveryIdField, refineWebhookSecurity, webhookSecurity, webhookSecurityShape } from "./schemas.ts";

/** Each issue as `path: message`, as the API's error body spells them. */
function problems(schema: z.ZodType, input: unknown): string[] {
  const result = schema.safeParse(input);
  return result.success ? [] : result.error.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`);
}

const standardSecret = `whsec_${randomBytes(24).toString("base64")}`;
const hmac = { header: "X-Signature", algorithm: "sha256", encoding: "hex" } as const;

describe("webhook trigger security settings", () => {
  test("public is the default and needs nothing else", () => {
    expect(webhookSecurity.parse({})).toEqual({ access: "public" });
    expect(webhookSecurity.parse({ access: "api_key", service: null, signing_secret: null, hmac: null })).toEqual({
      access: "api_key",
      service: null,
      signing_secret: null,
      hmac: null,
    });
  });

  test("signature access needs a service and a secret, each named", () => {
    expect(problems(webhookSecurity, { access: "signature" })).toEqual([
      "service: is required when access is signature",
      "signing_secret: is required when access is signature",
    ]);
    expect(problems(webhookSecurity, { access: "signature", service: "github", signing_secret: "s3cret" })).toEqual([]);
  });

  test("custom needs hmac, and hmac is refused for any other service", () => {
    expect(problems(webhookSecurity, { access: "signature", service: "custom", signing_secret: "k" })).toEqual([
      "hmac: is required when service is custom",
    ]);
    expect(problems(webhookSecurity, { access: "signature", service: "custom", signing_secret: "k", hmac })).toEqual(
      [],
    );
    expect(problems(webhookSecurity, { access: "signature", service: "github", signing_secret: "k", hmac })).toEqual([
      "hmac: is only used when service is custom",
    ]);
  });

  test("a secret without signature access is refused rather than silently unused", () => {
    expect(problems(webhookSecurity, { access: "public", signing_secret: "k" })).toEqual([
      "signing_secret: is only used when access is signature",
    ]);
  });

  test("a service without signature access is allowed: it still says where the event type and id are", () => {
    expect(webhookSecurity.parse({ access: "api_key", service: "github" })).toEqual({
      access: "api_key",
      service: "github",
    });
  });

  test("Stripe and Standard Webhooks secrets must have their providers' format", () => {
    const stripe = { access: "signature", service: "stripe" };
    expect(problems(webhookSecurity, { ...stripe, signing_secret: "whsec_4eC39HqLyjWDarjtT1zdp7dc" })).toEqual([]);
    expect(problems(webhookSecurity, { ...stripe, signing_secret: "sk_live_123" })).toEqual([
      "signing_secret: must be a Stripe endpoint secret: whsec_ followed by letters and digits",
    ]);
    expect(problems(webhookSecurity, { ...stripe, signing_secret: "whsec_abc def" })).toHaveLength(1);

    const standard = { access: "signature", service: "standard" };
    const wrongFormat =
      "signing_secret: must be a Standard Webhooks secret: whsec_ followed by 24 to 64 bytes in base64";
    expect(problems(webhookSecurity, { ...standard, signing_secret: standardSecret })).toEqual([]);
    expect(problems(webhookSecurity, { ...standard, signing_secret: standardSecret.slice(6) })).toEqual([wrongFormat]);
    expect(
      problems(webhookSecurity, { ...standard, signing_secret: `whsec_${randomBytes(16).toString("base64")}` }),
    ).toEqual([wrongFormat]);
    expect(problems(webhookSecurity, { ...standard, signing_secret: "whsec_not*base64*at*all*!!" })).toEqual([
      wrongFormat,
    ]);
  });

  test("secrets are bounded", () => {
    expect(
      problems(webhookSecurity, { access: "signature", service: "github", signing_secret: "k".repeat(1025) }),
    ).toEqual(["signing_secret: Too big: expected string to have <=1024 characters"]);
  });

  test("custom HMAC settings are checked field by field", () => {
    const custom = { access: "signature", service: "custom", signing_secret: "k" };
    expect(
      problems(webhookSecurity, {
        ...custom,
        hmac: { header: "X Sig", algorithm: "md5", encoding: "base32", prefix: "", tolerance_s: 0 },
      }),
    ).toEqual([
      "hmac.header: must be an HTTP header name",
      'hmac.algorithm: Invalid option: expected one of "sha1"|"sha256"|"sha512"',
      'hmac.encoding: Invalid option: expected one of "hex"|"base64"',
      "hmac.prefix: Too small: expected string to have >=1 characters",
      "hmac.tolerance_s: Too small: expected number to be >=1",
    ]);
    expect(problems(webhookSecurity, { ...custom, hmac: { ...hmac, tolerance_s: 60 } })).toEqual([
      "hmac.tolerance_s: needs timestamp_header",
    ]);
    expect(
      webhookSecurity.parse({
        ...custom,
        hmac: { ...hmac, prefix: "sha256=", timestamp_header: "X-Timestamp", tolerance_s: 60 },
      }).hmac,
    ).toEqual({ ...hmac, prefix: "sha256=", timestamp_header: "X-Timestamp", tolerance_s: 60 });
  });

  test("a flow embeds the settings in its trigger, and the paths name the trigger's fields", () => {
    const trigger = z
      .object({ type: z.literal("webhook"), ...webhookSecurityShape })
      .superRefine(refineWebhookSecurity());
    const flow = z.object({ trigger });
    expect(
      problems(flow, { trigger: { type: "webhook", access: "signature", service: "custom", signing_secret: "k" } }),
    ).toEqual(["trigger.hmac: is required when service is custom"]);
    const extended = webhookSecurity.extend({ events: z.array(z.string()).optional() });
    expect(problems(extended, { access: "signature", events: [] })).toContain(
      "service: is required when access is signature",
    );
  });

  test("an update that keeps the stored secret may leave it out", () => {
    const update = z.object(webhookSecurityShape).superRefine(refineWebhookSecurity({ secretRequired: false }));
    expect(problems(update, { access: "signature", service: "stripe" })).toEqual([]);
    expect(problems(update, { access: "signature", service: "stripe", signing_secret: "nope" })).toHaveLength(1);
  });

  test("a delivery id field is a dot path", () => {
    expect(deliveryIdField.parse("data.object.id")).toBe("data.object.id");
    expect(problems(deliveryIdField, "data..id")).toEqual([": must be a dot path of field names, e.g. data.id"]);
    expect(problems(deliveryIdField, `${"a.".repeat(100)}a`)).toEqual([
      ": Too big: expected string to have <=200 characters",
    ]);
  });
});
