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

const HEADER = "Stripe-Signature";
const SHAPE = "t=<timestamp>,v1=<hex signature>";

/**
 * Stripe: `Stripe-Signature: t=<unix s>,v1=<hex>[,v1=<hex>...]`, HMAC-SHA256 of
 * `<t>.<raw body>` keyed with the whole endpoint secret (`whsec_...` as it is, not
 * decoded). Several `v1` appear while a secret is being rolled: one match is enough.
 * Other schemes (`v0`, test-mode extras) are ignored. Tolerance: 300 s.
 */
export function verifyStripe(secret: string, request: SignedRequest): SignatureCheck {
  const header = headerValue(request.headers, HEADER);
  if (!header) return missingHeader(HEADER);
  let timestampText = "";
  let timestamps = 0;
  const signatures: string[] = [];
  for (const item of header.split(",")) {
    const separator = item.indexOf("=");
    if (separator < 0) continue;
    const key = item.slice(0, separator).trim();
    const value = item.slice(separator + 1).trim();
    if (key === "t") {
      timestamps += 1;
      timestampText = value;
    } else if (key === "v1") {
      signatures.push(value);
    }
  }
  const timestamp = parseUnixSeconds(timestampText);
  if (timestamps !== 1 || timestamp === null || signatures.length === 0) return malformedHeader(HEADER, SHAPE);
  const digests = signatures.map((text) => decodeDigest(text, "hex", "sha256"));
  if (digests.every((digest) => digest === null)) return malformedHeader(HEADER, SHAPE);

  const expected = hmac("sha256", secret, `${timestampText}.`, request.rawBody);
  if (!digests.some((digest) => digest !== null && digestsEqual(digest, expected))) return mismatch(HEADER);
  if (isStale(timestamp, request.now, DEFAULT_TOLERANCE_SECONDS)) {
    return staleTimestamp(HEADER, DEFAULT_TOLERANCE_SECONDS);
  }
  return VERIFIED;
}
