import {
  DEFAULT_TOLERANCE_SECONDS,
  decodeDigest,
  digestsEqual,
  headerValue,
  hmac,
  isStale,
  malformedHeader,
  mismatch,
  missingHeader,
  parseUnixSeconds,
  type SignatureCheck,
  type SignedRequest,
  staleTimestamp,
  VERIFIED,
} from "./common.ts";

/** Standard Webhooks names its headers `webhook-*`; Svix, which it grew from, sends `svix-*`. */
const FAMILIES = ["webhook", "svix"] as const;
const SECRET_PREFIX = "whsec_";

/**
 * Standard Webhooks (Svix): `webhook-id`, `webhook-timestamp` (Unix seconds, 300 s
 * tolerance) and `webhook-signature`, a space-separated list of `v1,<base64>` (several
 * while a secret is rotated; other versions such as the asymmetric `v1a` are ignored).
 * The signature is HMAC-SHA256 of `<id>.<timestamp>.<raw body>`, keyed with the base64
 * bytes after `whsec_`. Svix's own `svix-*` headers are read when `webhook-id` is absent.
 */
export function verifyStandard(secret: string, request: SignedRequest): SignatureCheck {
  const family = FAMILIES.find((name) => headerValue(request.headers, `${name}-id`)) ?? FAMILIES[0];
  const names = { id: `${family}-id`, timestamp: `${family}-timestamp`, signature: `${family}-signature` };
  const id = headerValue(request.headers, names.id);
  const timestampText = headerValue(request.headers, names.timestamp);
  const header = headerValue(request.headers, names.signature);
  if (!id) return missingHeader(names.id);
  if (!timestampText) return missingHeader(names.timestamp);
  if (!header) return missingHeader(names.signature);
  const timestamp = parseUnixSeconds(timestampText);
  if (timestamp === null) return malformedHeader(names.timestamp, "a Unix time in seconds");
  const digests = header
    .split(" ")
    .filter((entry) => entry.startsWith("v1,"))
    .map((entry) => decodeDigest(entry.slice(3), "base64", "sha256"));
  if (!digests.some((digest) => digest !== null)) return malformedHeader(names.signature, "v1,<base64 signature>");

  const key = Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, "base64");
  const expected = hmac("sha256", key, `${id}.${timestampText}.`, request.rawBody);
  if (!digests.some((digest) => digest !== null && digestsEqual(digest, expected))) return mismatch(names.signature);
  if (isStale(timestamp, request.now, DEFAULT_TOLERANCE_SECONDS)) {
    return staleTimestamp(names.timestamp, DEFAULT_TOLERANCE_SECONDS);
  }
  return VERIFIED;
}
