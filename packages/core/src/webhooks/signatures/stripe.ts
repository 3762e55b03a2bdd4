import {
  DEFAULT_TOLERANCE_SECONDS,
  decodeDigest,
  digestsEqual,
  headerValue,
  hmac,
  malformedHeader,
  missingHeader,
  parseUnixSeconds,
  type SignatureCheck,
  type SignedRequest,
  verdict,
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
  const times: string[] = [];
  const signatures: string[] = [];
  for (const item of header.split(",")) {
    const separator = item.indexOf("=");
    if (separator < 0) continue;
    const key = item.slice(0, separator).trim();
    const value = item.slice(separator + 1).trim();
    if (key === "t") times.push(value);
    else if (key === "v1") signatures.push(value);
  }
  const text = times.length === 1 ? (times[0] ?? "") : "";
  const seconds = parseUnixSeconds(text);
  const digests = signatures.map((signature) => decodeDigest(signature, "hex", "sha256"));
  if (seconds === null || !digests.some(Boolean)) return malformedHeader(HEADER, SHAPE);

  const expected = hmac("sha256", secret, `${text}.`, request.rawBody);
  return verdict(
    HEADER,
    digests.some((digest) => digestsEqual(digest, expected)),
    {
      timestamp: { header: HEADER, text, seconds },
      toleranceSeconds: DEFAULT_TOLERANCE_SECONDS,
      now: request.now,
    },
  );
}
