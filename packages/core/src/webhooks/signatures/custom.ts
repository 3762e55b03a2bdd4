import type { HmacConfig } from "../schemas.ts";
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

/**
 * Custom HMAC: `hmac.header` holds `[hmac.prefix]<digest>` in `hmac.encoding` (hex in
 * either case), the HMAC (`hmac.algorithm`, keyed with the signing secret's UTF-8 bytes)
 * of the raw body. With `hmac.timestamp_header`, that header carries the send time in
 * Unix seconds, the signed content is `<timestamp>.<raw body>` (as Stripe does), and a
 * timestamp more than `hmac.tolerance_s` (default 300) from now is refused.
 */
export function verifyCustom(secret: string, config: HmacConfig, request: SignedRequest): SignatureCheck {
  const header = headerValue(request.headers, config.header);
  if (!header) return missingHeader(config.header);
  const prefix = config.prefix ?? "";
  const digest = header.startsWith(prefix)
    ? decodeDigest(header.slice(prefix.length), config.encoding, config.algorithm)
    : null;
  if (!digest) return malformedHeader(config.header, `${prefix}<${config.encoding} ${config.algorithm} signature>`);

  if (config.timestamp_header === undefined) {
    return digestsEqual(digest, hmac(config.algorithm, secret, request.rawBody)) ? VERIFIED : mismatch(config.header);
  }
  const timestampText = headerValue(request.headers, config.timestamp_header);
  if (!timestampText) return missingHeader(config.timestamp_header);
  const timestamp = parseUnixSeconds(timestampText);
  if (timestamp === null) return malformedHeader(config.timestamp_header, "a Unix time in seconds");
  if (!digestsEqual(digest, hmac(config.algorithm, secret, `${timestampText}.`, request.rawBody))) {
    return mismatch(config.header);
  }
  const tolerance = config.tolerance_s ?? DEFAULT_TOLERANCE_SECONDS;
  return isStale(timestamp, request.now, tolerance) ? staleTimestamp(config.timestamp_header, tolerance) : VERIFIED;
}
