import type { HeaderHmacScheme } from "./header-hmac.ts";

/**
 * GitHub: `X-Hub-Signature-256: sha256=<hex>`, HMAC-SHA256 of the raw body. The legacy
 * SHA-1 `X-Hub-Signature` is not accepted. GitHub signs no timestamp, so a captured
 * delivery stays valid: de-duplication by `X-GitHub-Delivery` is what stops a replay.
 */
export const GITHUB: HeaderHmacScheme = {
  header: "X-Hub-Signature-256",
  prefix: "sha256=",
  encoding: "hex",
  algorithm: "sha256",
  shape: "sha256=<hex signature>",
};
