import type { SignatureCheck, SignedRequest } from "./common.ts";
import { type HeaderHmacScheme, verifyHeaderHmac } from "./header-hmac.ts";

/**
 * Shopify: `X-Shopify-Hmac-Sha256: <base64>`, HMAC-SHA256 of the raw body with the app's
 * client secret. No timestamp is signed; `X-Shopify-Webhook-Id` de-duplicates replays.
 */
const SHOPIFY: HeaderHmacScheme = {
  header: "X-Shopify-Hmac-Sha256",
  encoding: "base64",
  algorithm: "sha256",
  shape: "a base64 HMAC-SHA256",
};

export const verifyShopify = (secret: string, request: SignedRequest): SignatureCheck =>
  verifyHeaderHmac(secret, SHOPIFY, request);
