import type { HmacConfig } from "../schemas.ts";
import { DEFAULT_TOLERANCE_SECONDS, type SignatureCheck, type SignedRequest } from "./common.ts";
import { verifyHeaderHmac } from "./header-hmac.ts";

/**
 * Custom HMAC: `hmac.header` holds `[hmac.prefix]<digest>` in `hmac.encoding` (hex in
 * either case), the HMAC (`hmac.algorithm`, keyed with the signing secret's UTF-8 bytes)
 * of the raw body. With `hmac.timestamp_header`, that header carries the send time in
 * Unix seconds, the signed content is `<timestamp>.<raw body>` (as Stripe does), and a
 * timestamp more than `hmac.tolerance_s` (default 300) from now is refused.
 */
export function verifyCustom(secret: string, config: HmacConfig, request: SignedRequest): SignatureCheck {
  const { header, prefix, encoding, algorithm, timestamp_header } = config;
  return verifyHeaderHmac(
    secret,
    {
      header,
      prefix,
      encoding,
      algorithm,
      shape: `${prefix ?? ""}<${encoding} ${algorithm} signature>`,
      timestamp:
        timestamp_header === undefined
          ? undefined
          : {
              header: timestamp_header,
              signedBefore: (timestamp) => `${timestamp}.`,
              toleranceSeconds: config.tolerance_s ?? DEFAULT_TOLERANCE_SECONDS,
            },
    },
    request,
  );
}
