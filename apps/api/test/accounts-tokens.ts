import { createHmac, randomBytes } from "node:crypto";

/** A signing key the test knows, so it can mint tokens the server would (expired ones, say). */
export function testSigningKey(): { kid: string; secret: string; env: string } {
  const secret = randomBytes(32).toString("base64url");
  return { kid: "test", secret, env: `test:${secret}` };
}

/** An HS256 JWT signed by hand, to present tokens the server never issued. */
export function handSignedJwt(
  secret: Uint8Array | Buffer,
  header: Record<string, unknown>,
  payload: Record<string, unknown>,
): string {
  const encode = (part: Record<string, unknown>) => Buffer.from(JSON.stringify(part)).toString("base64url");
  const signingInput = `${encode(header)}.${encode(payload)}`;
  const signature = createHmac("sha256", secret).update(signingInput).digest("base64url");
  return `${signingInput}.${signature}`;
}

/** The claims of a JWT, read without verifying it. */
export function jwtParts(token: string): { header: Record<string, unknown>; payload: Record<string, unknown> } {
  const [header = "", payload = ""] = token.split(".");
  return {
    header: JSON.parse(Buffer.from(header, "base64url").toString()),
    payload: JSON.parse(Buffer.from(payload, "base64url").toString()),
  };
}
