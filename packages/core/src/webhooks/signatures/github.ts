import {
  decodeDigest,
  digestsEqual,
  headerValue,
  hmac,
  malformedHeader,
  mismatch,
  missingHeader,
  type SignatureCheck,
  type SignedRequest,
  VERIFIED,
} from "./common.ts";

const HEADER = "X-Hub-Signature-256";
const PREFIX = "sha256=";

/**
 * GitHub: `X-Hub-Signature-256: sha256=<hex>`, HMAC-SHA256 of the raw body. The legacy
 * SHA-1 `X-Hub-Signature` is not accepted. GitHub signs no timestamp, so a captured
 * delivery stays valid: de-duplication by `X-GitHub-Delivery` is what stops a replay.
 */
export function verifyGithub(secret: string, request: SignedRequest): SignatureCheck {
  const header = headerValue(request.headers, HEADER);
  if (!header) return missingHeader(HEADER);
  const digest = header.startsWith(PREFIX) ? decodeDigest(header.slice(PREFIX.length), "hex", "sha256") : null;
  if (!digest) return malformedHeader(HEADER, "sha256=<hex signature>");
  return digestsEqual(digest, hmac("sha256", secret, request.rawBody)) ? VERIFIED : mismatch(HEADER);
}
