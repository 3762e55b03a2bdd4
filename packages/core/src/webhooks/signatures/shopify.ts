import { digestsEqual, hmac, isCheck, readDigest, type SignatureCheck, type SignedRequest, verdict } from "./common.ts";

const HEADER = "X-Shopify-Hmac-Sha256";

/**
 * Shopify: `X-Shopify-Hmac-Sha256: <base64>`, HMAC-SHA256 of the raw body with the app's
 * client secret. No timestamp is signed; `X-Shopify-Webhook-Id` de-duplicates replays.
 */
export function verifyShopify(secret: string, request: SignedRequest): SignatureCheck {
  const digest = readDigest(request.headers, HEADER, {
    encoding: "base64",
    algorithm: "sha256",
    shape: "a base64 HMAC-SHA256",
  });
  if (isCheck(digest)) return digest;
  return verdict(HEADER, digestsEqual(digest, hmac("sha256", secret, request.rawBody)));
}
