import {
  DEFAULT_TOLERANCE_SECONDS,
  decodeDigest,
  digestsEqual,
  headerValue,
  hmac,
  isCheck,
  malformedHeader,
  missingHeader,
  readTimestamp,
  type SignatureCheck,
  type SignedRequest,
  verdict,
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
  const [idHeader, signatureHeader] = [`${family}-id`, `${family}-signature`];
  const id = headerValue(request.headers, idHeader);
  if (!id) return missingHeader(idHeader);
  const timestamp = readTimestamp(request.headers, `${family}-timestamp`);
  if (isCheck(timestamp)) return timestamp;
  const header = headerValue(request.headers, signatureHeader);
  if (!header) return missingHeader(signatureHeader);
  const digests = header
    .split(" ")
    .filter((entry) => entry.startsWith("v1,"))
    .map((entry) => decodeDigest(entry.slice(3), "base64", "sha256"));
  if (!digests.some(Boolean)) return malformedHeader(signatureHeader, "v1,<base64 signature>");

  const key = Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, "base64");
  const expected = hmac("sha256", key, `${id}.${timestamp.text}.`, request.rawBody);
  return verdict(
    signatureHeader,
    digests.some((digest) => digestsEqual(digest, expected)),
    {
      timestamp,
      toleranceSeconds: DEFAULT_TOLERANCE_SECONDS,
      now: request.now,
    },
  );
}
