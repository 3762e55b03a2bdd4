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

const HEADER = "X-Slack-Signature";
const TIMESTAMP_HEADER = "X-Slack-Request-Timestamp";
const PREFIX = "v0=";

/**
 * Slack: `X-Slack-Signature: v0=<hex>`, HMAC-SHA256 of `v0:<timestamp>:<raw body>` with
 * the app's signing secret, the timestamp from `X-Slack-Request-Timestamp` (Unix
 * seconds, 300 s tolerance). URL verification requests are signed the same way.
 */
export function verifySlack(secret: string, request: SignedRequest): SignatureCheck {
  const header = headerValue(request.headers, HEADER);
  if (!header) return missingHeader(HEADER);
  const timestampText = headerValue(request.headers, TIMESTAMP_HEADER);
  if (!timestampText) return missingHeader(TIMESTAMP_HEADER);
  const timestamp = parseUnixSeconds(timestampText);
  if (timestamp === null) return malformedHeader(TIMESTAMP_HEADER, "a Unix time in seconds");
  const digest = header.startsWith(PREFIX) ? decodeDigest(header.slice(PREFIX.length), "hex", "sha256") : null;
  if (!digest) return malformedHeader(HEADER, "v0=<hex signature>");

  const expected = hmac("sha256", secret, `v0:${timestampText}:`, request.rawBody);
  if (!digestsEqual(digest, expected)) return mismatch(HEADER);
  if (isStale(timestamp, request.now, DEFAULT_TOLERANCE_SECONDS)) {
    return staleTimestamp(TIMESTAMP_HEADER, DEFAULT_TOLERANCE_SECONDS);
  }
  return VERIFIED;
}
