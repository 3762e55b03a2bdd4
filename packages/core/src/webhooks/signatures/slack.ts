import {
  DEFAULT_TOLERANCE_SECONDS,
  digestsEqual,
  hmac,
  isCheck,
  readDigest,
  readTimestamp,
  type SignatureCheck,
  type SignedRequest,
  verdict,
} from "./common.ts";

const HEADER = "X-Slack-Signature";

/**
 * Slack: `X-Slack-Signature: v0=<hex>`, HMAC-SHA256 of `v0:<timestamp>:<raw body>` with
 * the app's signing secret, the timestamp from `X-Slack-Request-Timestamp` (Unix
 * seconds, 300 s tolerance). URL verification requests are signed the same way.
 */
export function verifySlack(secret: string, request: SignedRequest): SignatureCheck {
  const digest = readDigest(request.headers, HEADER, {
    prefix: "v0=",
    encoding: "hex",
    algorithm: "sha256",
    shape: "v0=<hex signature>",
  });
  if (isCheck(digest)) return digest;
  const timestamp = readTimestamp(request.headers, "X-Slack-Request-Timestamp");
  if (isCheck(timestamp)) return timestamp;

  const expected = hmac("sha256", secret, `v0:${timestamp.text}:`, request.rawBody);
  return verdict(HEADER, digestsEqual(digest, expected), {
    timestamp,
    toleranceSeconds: DEFAULT_TOLERANCE_SECONDS,
    now: request.now,
  });
}
