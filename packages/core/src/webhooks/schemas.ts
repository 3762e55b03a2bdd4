import { z } from "zod";
import { WEBHOOK_SERVICES } from "../enums.ts";

/**
 * The security part of a flow's webhook trigger (`../shared/design/api.md`, "Flows and
 * runs"). Flows embed it: `webhookSecurity.extend({ type, events, response_mode })`, or
 * spread `webhookSecurityShape` into their own object and refine it with
 * `refineWebhookSecurity()`. Messages do not repeat the field: the path names it
 * (`trigger.service: is required when access is signature`).
 */

export const webhookAccess = z.enum(["public", "api_key", "signature"]).meta({
  description:
    "`public` (default); `api_key`: an API key of the flow's account in query `api_key` or header `X-Api-Key`; " +
    "`signature`: the delivery is signed by `service` with `signing_secret`.",
});
export type WebhookAccess = z.infer<typeof webhookAccess>;

export const webhookService = z.enum(WEBHOOK_SERVICES).meta({
  description:
    "Who sends the deliveries: how they are signed, and where the event type and delivery id are read. " +
    "`standard` is Standard Webhooks (Svix); `custom` needs `hmac`.",
});
export type WebhookService = z.infer<typeof webhookService>;

/** An HTTP field name (RFC 9110 token), as a sender would put a signature in one. */
const headerName = z
  .string()
  .max(100)
  .regex(/^[!#$%&'*+.^`|~\w-]+$/, { error: "must be an HTTP header name" });

export const hmacConfig = z
  .object({
    header: headerName.meta({ description: "The header carrying the signature, e.g. `X-Signature`." }),
    algorithm: z.enum(["sha1", "sha256", "sha512"]),
    encoding: z.enum(["hex", "base64"]),
    prefix: z
      .string()
      .min(1)
      .max(64)
      .optional()
      .meta({ description: "Text before the signature in the header, e.g. `sha256=`; required when set." }),
    timestamp_header: headerName.optional().meta({
      description:
        "A header carrying the send time in Unix seconds. When set, the signed content is " +
        "`<timestamp>.<raw body>` and deliveries older or newer than `tolerance_s` are refused.",
    }),
    tolerance_s: z
      .number()
      .int()
      .min(1)
      .max(86_400)
      .optional()
      .meta({ description: "Seconds a timestamp may differ from the receiving time; default 300." }),
  })
  .superRefine((hmac, ctx) => {
    if (hmac.tolerance_s !== undefined && hmac.timestamp_header === undefined) {
      ctx.addIssue({ code: "custom", path: ["tolerance_s"], message: "needs timestamp_header" });
    }
  })
  .meta({ id: "WebhookHmac", description: "How a `custom` sender signs: HMAC of the raw body." });
export type HmacConfig = z.infer<typeof hmacConfig>;

/** Signing secrets are sealed at rest and compared as given; 1 KiB is far above any provider's. */
export const signingSecret = z
  .string()
  .min(1)
  .max(1024)
  .meta({ description: "Write-only: never returned. Stripe and Standard Webhooks secrets start with `whsec_`." });

export const webhookSecurityShape = {
  access: webhookAccess.default("public"),
  service: webhookService.nullish(),
  signing_secret: signingSecret.nullish(),
  hmac: hmacConfig.nullish(),
};

/** Standard Webhooks: "whsec_" + base64 of a key that SHOULD be 24 to 64 bytes. */
const STANDARD_SECRET = /^whsec_([A-Za-z0-9+/]+={0,2})$/;
/** Stripe shows its endpoint secrets as "whsec_" + letters and digits, and uses the whole string as the key. */
const STRIPE_SECRET = /^whsec_[A-Za-z0-9]+$/;

/** Why a secret does not fit the service's format, or null when it does or the service defines none. */
export function signingSecretProblem(service: WebhookService, secret: string): string | null {
  if (service === "stripe" && !STRIPE_SECRET.test(secret)) {
    return "must be a Stripe endpoint secret: whsec_ followed by letters and digits";
  }
  if (service === "standard") {
    const key = STANDARD_SECRET.exec(secret)?.[1];
    const bytes = key ? Buffer.from(key, "base64").byteLength : 0;
    if (bytes < 24 || bytes > 64) {
      return "must be a Standard Webhooks secret: whsec_ followed by 24 to 64 bytes in base64";
    }
  }
  return null;
}

type WebhookSecurityInput = {
  access: WebhookAccess;
  service?: WebhookService | null;
  signing_secret?: string | null;
  hmac?: HmacConfig | null;
};

/**
 * The rules across fields: `service` and `signing_secret` with `signature` (the secret in
 * the service's format), `hmac` exactly with `custom`. A flow update that keeps its stored
 * secret passes `{ secretRequired: false }`.
 */
export function refineWebhookSecurity(options: { secretRequired?: boolean } = {}) {
  const secretRequired = options.secretRequired ?? true;
  return (trigger: WebhookSecurityInput, ctx: z.RefinementCtx) => {
    const issue = (field: keyof WebhookSecurityInput, message: string) =>
      ctx.addIssue({ code: "custom", path: [field], message });
    const { access, service, signing_secret: secret, hmac } = trigger;
    if (access === "signature") {
      if (!service) issue("service", "is required when access is signature");
      if (!secret && secretRequired) issue("signing_secret", "is required when access is signature");
      if (service && secret) {
        const problem = signingSecretProblem(service, secret);
        if (problem) issue("signing_secret", problem);
      }
    } else if (secret) {
      issue("signing_secret", "is only used when access is signature");
    }
    if (service === "custom" && !hmac) issue("hmac", "is required when service is custom");
    if (service !== "custom" && hmac) issue("hmac", "is only used when service is custom");
  };
}

export const webhookSecurity = z.object(webhookSecurityShape).superRefine(refineWebhookSecurity());
export type WebhookSecurity = z.infer<typeof webhookSecurity>;

/**
 * Where the delivery id is read when the service does not define one (or sends none):
 * a dot path into the body, e.g. `id` or `data.object.id`.
 */
export const deliveryIdField = z
  .string()
  .max(200)
  .regex(/^[\w-]+(\.[\w-]+)*$/, { error: "must be a dot path of field names, e.g. data.id" });
