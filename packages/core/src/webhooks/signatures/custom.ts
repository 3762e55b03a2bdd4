import type { HmacConfig } from "../schemas.ts";
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

/**
 * Custom HMAC: `hmac.header` holds `[hmac.prefix]<digest>` in `hmac.encoding` (hex in
 * either case), the HMAC (`hmac.algorithm`, keyed with the signing secret's UTF-8 bytes)
 * of the raw body. With `hmac.timestamp_header`, that header carries the send time in
 * Unix seconds, the signed content is `<timestamp>.<raw body>` (as Stripe does), and a
 * timestamp more than `hmac.tolerance_s` (default 300) from now is refused.
 */
export function verifyCustom(secret: string, config: HmacConfig, request: SignedRequest): SignatureCheck {
  const { header, prefix, encoding, algorithm } = config;
  const shape = `${prefix ?? ""}<${encoding} ${algorithm} signature>`;
  const digest = readDigest(request.headers, header, { prefix, encoding, algorithm, shape });
  if (isCheck(digest)) return digest;
  if (config.timestamp_header === undefined) {
    return verdict(header, digestsEqual(digest, hmac(algorithm, secret, request.rawBody)));
  }

  const timestamp = readTimestamp(request.headers, config.timestamp_header);
  if (isCheck(timestamp)) return timestamp;
  const expected = hmac(algorithm, secret, `${timestamp.text}.`, request.rawBody);
  return verdict(header, digestsEqual(digest, expected), {
    timestamp,
    toleranceSeconds: config.tolerance_s ?? DEFAULT_TOLERANCE_SECONDS,
    now: request.now,
  });
}
