import type { HeaderHmacScheme } from "./header-hmac.ts";

/**
 * Shopify: `X-Shopify-Hmac-Sha256: <base64>`, HMAC-SHA256 of the raw body with the app's
 * client secret. No timestamp is signed; `X-Shopify-Webhook-Id` de-duplicates replays.
 */
export const SHOPIFY: HeaderHmacScheme = {
  header: "X-Shopify-Hmac-Sha256",
  encoding: "base64",
  algorithm: "sha256",
  shape: "a base64 HMAC-SHA256",
};
