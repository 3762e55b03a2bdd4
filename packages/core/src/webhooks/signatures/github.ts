import { digestsEqual, hmac, isCheck, readDigest, type SignatureCheck, type SignedRequest, verdict } from "./common.ts";

const HEADER = "X-Hub-Signature-256";

/**
 * GitHub: `X-Hub-Signature-256: sha256=<hex>`, HMAC-SHA256 of the raw body. The legacy
 * SHA-1 `X-Hub-Signature` is not accepted. GitHub signs no timestamp, so a captured
 * delivery stays valid: de-duplication by `X-GitHub-Delivery` is what stops a replay.
 */
export function verifyGithub(secret: string, request: SignedRequest): SignatureCheck {
  const digest = readDigest(request.headers, HEADER, {
    prefix: "sha256=",
    encoding: "hex",
    algorithm: "sha256",
    shape: "sha256=<hex signature>",
  });
  if (isCheck(digest)) return digest;
  return verdict(HEADER, digestsEqual(digest, hmac("sha256", secret, request.rawBody)));
}
