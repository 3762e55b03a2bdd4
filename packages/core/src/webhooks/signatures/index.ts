import type { HmacConfig, WebhookService } from "../schemas.ts";
import type { SignatureCheck, SignedRequest } from "./common.ts";
import { verifyCustom } from "./custom.ts";
import { GITHUB } from "./github.ts";
import { verifyHeaderHmac } from "./header-hmac.ts";
import { SHOPIFY } from "./shopify.ts";
import { SLACK } from "./slack.ts";
import { verifyStandard } from "./standard.ts";
import { verifyStripe } from "./stripe.ts";
import { verifyTwilio } from "./twilio.ts";

export type { SignatureCheck, SignatureFailure, SignedRequest } from "./common.ts";

/** A trigger's signing set-up, with its secret opened. */
export type SignatureConfig =
  | { service: Exclude<WebhookService, "custom">; secret: string }
  | { service: "custom"; secret: string; hmac: HmacConfig };

/**
 * The one entry point: checks a delivery's signature the way its service signs, over
 * the raw body bytes, comparing digests in constant time. Never throws on what a sender
 * controls; a failure says why (`missing_header`, `malformed_header`, `stale_timestamp`,
 * `mismatch`) in a message that names the header. Timestamps are checked after the
 * signature, so `stale_timestamp` means a genuine but old (or replayed) delivery.
 */
export function verifyWebhookSignature(config: SignatureConfig, request: SignedRequest): SignatureCheck {
  switch (config.service) {
    case "stripe":
      return verifyStripe(config.secret, request);
    case "github":
      return verifyHeaderHmac(config.secret, GITHUB, request);
    case "slack":
      return verifyHeaderHmac(config.secret, SLACK, request);
    case "shopify":
      return verifyHeaderHmac(config.secret, SHOPIFY, request);
    case "twilio":
      return verifyTwilio(config.secret, request);
    case "standard":
      return verifyStandard(config.secret, request);
    case "custom":
      return verifyCustom(config.secret, config.hmac, request);
  }
}
