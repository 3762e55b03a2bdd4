import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { keptInDataDir } from "./key-files.ts";

/**
 * Encryption at rest for secrets kept in the database (TOTP secrets now, the secrets
 * bucket later): AES-256-GCM with a fresh 96-bit IV per value. `context` (e.g.
 * `totp:<user id>`) is bound as associated data, so a sealed value copied to another
 * row does not open there.
 */
export interface Sealer {
  seal(plaintext: string, context: string): string;
  /** Throws when the value was altered, sealed for another context, or with another key. */
  open(sealed: string, context: string): string;
}

const VERSION = "v1";
const IV_BYTES = 12;
const TAG_BYTES = 16;
export const SECRETS_KEY_FILE = "secrets-key";

export function createSealer(key: Uint8Array): Sealer {
  if (key.byteLength !== 32) throw new Error("the secrets key must be 32 bytes");
  return {
    seal(plaintext, context) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv("aes-256-gcm", key, iv).setAAD(Buffer.from(context, "utf8"));
      const sealed = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final(), cipher.getAuthTag()]);
      return `${VERSION}.${iv.toString("base64url")}.${sealed.toString("base64url")}`;
    },
    open(sealed, context) {
      const [version, ivText, bodyText] = sealed.split(".");
      if (version !== VERSION || !ivText || !bodyText) throw new Error("not a sealed value");
      const body = Buffer.from(bodyText, "base64url");
      const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(ivText, "base64url"))
        .setAAD(Buffer.from(context, "utf8"))
        .setAuthTag(body.subarray(body.byteLength - TAG_BYTES));
      return Buffer.concat([decipher.update(body.subarray(0, body.byteLength - TAG_BYTES)), decipher.final()]).toString(
        "utf8",
      );
    },
  };
}

/** `SECRETS_KEY` (base64url, 32 bytes), or in embedded mode the key generated once into `dataDir`. */
export async function loadSecretsKey(configured: string | undefined, dataDir: string): Promise<Uint8Array> {
  const text =
    configured ?? (await keptInDataDir(dataDir, SECRETS_KEY_FILE, () => randomBytes(32).toString("base64url")));
  const key = new Uint8Array(Buffer.from(text, "base64url"));
  if (key.byteLength !== 32) throw new Error("SECRETS_KEY must be 32 bytes, base64url-encoded");
  return key;
}
