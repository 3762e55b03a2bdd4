import { DEFAULT_TOLERANCE_SECONDS } from "./common.ts";
import type { HeaderHmacScheme } from "./header-hmac.ts";

/**
 * Slack: `X-Slack-Signature: v0=<hex>`, HMAC-SHA256 of `v0:<timestamp>:<raw body>` with
 * the app's signing secret, the timestamp from `X-Slack-Request-Timestamp` (Unix
 * seconds, 300 s tolerance). URL verification requests are signed the same way.
 */
export const SLACK: HeaderHmacScheme = {
  header: "X-Slack-Signature",
  prefix: "v0=",
  encoding: "hex",
  algorithm: "sha256",
  shape: "v0=<hex signature>",
  timestamp: {
    header: "X-Slack-Request-Timestamp",
    signedBefore: (timestamp) => `v0:${timestamp}:`,
    toleranceSeconds: DEFAULT_TOLERANCE_SECONDS,
  },
};
