import {
  type DigestFormat,
  digestsEqual,
  hmac,
  isCheck,
  readDigest,
  readTimestamp,
  type SignatureCheck,
  type SignedRequest,
  verdict,
} from "./common.ts";

/**
 * A scheme that puts one HMAC of the raw body in one header (GitHub, Shopify, Slack, a
 * custom HMAC): the header, how the digest is written in it, and, when the send time is
 * signed too, the header that carries it (Unix seconds), what precedes the raw body in the
 * signed content given that time, and how far from now it may be.
 */
export interface HeaderHmacScheme extends DigestFormat {
  header: string;
  timestamp?: { header: string; signedBefore: (timestamp: string) => string; toleranceSeconds: number };
}

/** Checks a delivery signed under `scheme` with `secret`: the digest first, then the time it was sent. */
export function verifyHeaderHmac(secret: string, scheme: HeaderHmacScheme, request: SignedRequest): SignatureCheck {
  const digest = readDigest(request.headers, scheme.header, scheme);
  if (isCheck(digest)) return digest;
  if (!scheme.timestamp) {
    return verdict(scheme.header, digestsEqual(digest, hmac(scheme.algorithm, secret, request.rawBody)));
  }
  const { header, signedBefore, toleranceSeconds } = scheme.timestamp;
  const timestamp = readTimestamp(request.headers, header);
  if (isCheck(timestamp)) return timestamp;
  const expected = hmac(scheme.algorithm, secret, signedBefore(timestamp.text), request.rawBody);
  return verdict(scheme.header, digestsEqual(digest, expected), { timestamp, toleranceSeconds, now: request.now });
}
