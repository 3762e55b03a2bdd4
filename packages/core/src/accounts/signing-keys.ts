import { randomBytes } from "node:crypto";
import { keptInDataDir } from "../key-files.ts";

/** An HS256 key for access tokens, named by the `kid` header of the tokens it signs. */
export interface SigningKey {
  kid: string;
  secret: Uint8Array;
}

/** The key that signs new tokens, and every key still accepted (the signing one included). */
export interface SigningKeyRing {
  current: SigningKey;
  byKid: Map<string, SigningKey>;
}

export const GENERATED_KEYS_FILE = "jwt-signing-keys";

/** Parses `kid:secret[,kid:secret...]` (base64url secrets); the first key signs. */
export function parseSigningKeys(text: string): SigningKeyRing {
  const keys = text
    .trim()
    .split(",")
    .map((entry) => {
      const [kid, secret] = entry.trim().split(":");
      if (!kid || !secret) throw new Error("signing keys must be written kid:secret[,kid:secret...]");
      const bytes = new Uint8Array(Buffer.from(secret, "base64url"));
      if (bytes.byteLength < 32) throw new Error(`signing key ${kid} is shorter than 32 bytes`);
      return { kid, secret: bytes };
    });
  const current = keys[0];
  if (!current) throw new Error("no signing key given");
  const byKid = new Map<string, SigningKey>();
  for (const key of keys) {
    if (byKid.has(key.kid)) throw new Error(`signing key ${key.kid} is listed twice`);
    byKid.set(key.kid, key);
  }
  return { current, byKid };
}

/** A fresh key in the `JWT_SIGNING_KEYS` format; its kid is unique even among keys made in the same millisecond. */
export function generateSigningKeyText(): string {
  return `k${Date.now().toString(36)}${randomBytes(4).toString("hex")}:${randomBytes(32).toString("base64url")}`;
}

/**
 * The configured keys, or (embedded mode, nothing configured) the key kept in
 * `dataDir`, generated on first start with mode 0600.
 */
export async function loadSigningKeys(configured: string | undefined, dataDir: string): Promise<SigningKeyRing> {
  if (configured) return parseSigningKeys(configured);
  return parseSigningKeys(await keptInDataDir(dataDir, GENERATED_KEYS_FILE, generateSigningKeyText));
}
