import { createCipheriv, randomBytes } from "node:crypto";

/**
 * For tests: a value as the first release of sealing wrote it (`v1.<iv>.<body>`, no key
 * id), byte for byte, so tests prove such values still open and get re-sealed.
 */
export function sealedByFirstRelease(key: string, plaintext: string, context: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", Buffer.from(key, "base64url"), iv).setAAD(Buffer.from(context, "utf8"));
  const sealed = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final(), cipher.getAuthTag()]);
  return `v1.${iv.toString("base64url")}.${sealed.toString("base64url")}`;
}
