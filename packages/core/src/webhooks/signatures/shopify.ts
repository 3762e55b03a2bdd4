import {
  decodeDigest,
  digestsEqual,
  headerValue,
  hmac,
  malformedHeader,
  mismatch,
  missingHeader,
  type SignatureCheck,
  type SignedRequest,
  VERIFIED,
} from "./common.ts";

const HEADER = "X-Shopify-Hmac-Sha256";

/**
 * Shopify: `X-Shopify-Hmac-Sha256: <base64>`, HMAC-SHA256 of the raw body with the app's
 * client secret. No timestamp is signed; `X-Shopify-Webhook-Id` de-duplicates replays.
 */
export function verifyShopify(secret: string, request: SignedRequest): SignatureCheck {
  const header = headerValue(request.headers, HEADER);
  if (!header) return missingHeader(HEADER);
  const digest = decodeDigest(header, "base64", "sha256");
  if (!digest) return malformedHeader(HEADER, "a base64 HMAC-SHA256");
  return digestsEqual(digest, hmac("sha256", secret, request.rawBody)) ? VERIFIED : mismatch(HEADER);
}
