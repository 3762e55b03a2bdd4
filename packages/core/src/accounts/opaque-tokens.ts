import { createHash, randomBytes } from "node:crypto";

/**
 * Secrets handed to clients (refresh tokens, MFA tokens, API keys): 32 random bytes,
 * base64url, behind a readable prefix. They are shown once and stored only as hashes;
 * with 256 bits of entropy a plain SHA-256 is enough (no guessing to slow down).
 */
export function newOpaqueToken(prefix: string): string {
  return `${prefix}${randomBytes(32).toString("base64url")}`;
}

export function hashOpaqueToken(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}
