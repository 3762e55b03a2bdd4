import { createHmac, timingSafeEqual } from "node:crypto";
import type { HmacConfig } from "../schemas.ts";

export type HmacAlgorithm = HmacConfig["algorithm"];
export type DigestEncoding = HmacConfig["encoding"];

/** What the ingress hands every verifier: the delivery exactly as it arrived. */
export interface SignedRequest {
  headers: Headers;
  /** The body bytes as received, before any parsing. */
  rawBody: Uint8Array;
  /**
   * The public URL the sender posted to, query string included, as the sender knows it
   * (`WEBHOOK_BASE_URL/<webhook_id>?...`), not the internal one. Twilio signs it.
   */
  url: string;
  /** The receiving time, for timestamp tolerances; defaults to now. */
  now?: Date;
}

export type SignatureFailure = "missing_header" | "malformed_header" | "stale_timestamp" | "mismatch";

/** The outcome of a check; `message` names the header and is safe to show the sender. */
export type SignatureCheck = { ok: true } | { ok: false; reason: SignatureFailure; message: string };

export const VERIFIED: SignatureCheck = { ok: true };

export function failure(reason: SignatureFailure, message: string): SignatureCheck {
  return { ok: false, reason, message };
}

export const missingHeader = (name: string) => failure("missing_header", `missing ${name} header`);
export const malformedHeader = (name: string, expected: string) =>
  failure("malformed_header", `${name} header is not ${expected}`);
export const mismatch = (name: string) => failure("mismatch", `${name} does not match the payload`);

/** A header's value, or null when absent or blank. */
export function headerValue(headers: Headers, name: string): string | null {
  const value = headers.get(name)?.trim();
  return value ? value : null;
}

export function hmac(algorithm: HmacAlgorithm, key: string | Uint8Array, ...parts: (string | Uint8Array)[]): Buffer {
  const mac = createHmac(algorithm, key);
  for (const part of parts) mac.update(part);
  return mac.digest();
}

const DIGEST_BYTES: Record<HmacAlgorithm, number> = { sha1: 20, sha256: 32, sha512: 64 };
const HEX = /^[0-9a-fA-F]+$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** A signature as sent, decoded; null unless it is valid in `encoding` and as long as `algorithm`'s digest. */
export function decodeDigest(text: string, encoding: DigestEncoding, algorithm: HmacAlgorithm): Buffer | null {
  if (!(encoding === "hex" ? HEX : BASE64).test(text)) return null;
  const bytes = Buffer.from(text, encoding);
  return bytes.byteLength === DIGEST_BYTES[algorithm] ? bytes : null;
}

/** How a service writes its one signature in its header, e.g. GitHub's `sha256=<hex>`. */
export interface DigestFormat {
  prefix?: string;
  encoding: DigestEncoding;
  algorithm: HmacAlgorithm;
  /** Shown in the malformed-header message: "X-Hub-Signature-256 header is not <shape>". */
  shape: string;
}

/** The digest a single-signature header carries, or why there is none. */
export function readDigest(headers: Headers, name: string, format: DigestFormat): Buffer | SignatureCheck {
  const header = headerValue(headers, name);
  if (!header) return missingHeader(name);
  const prefix = format.prefix ?? "";
  const digest = header.startsWith(prefix)
    ? decodeDigest(header.slice(prefix.length), format.encoding, format.algorithm)
    : null;
  return digest ?? malformedHeader(name, format.shape);
}

/** Constant-time comparison; both are digests of one algorithm, so their length is no secret. */
export function digestsEqual(received: Uint8Array | null, expected: Uint8Array): boolean {
  return received !== null && received.byteLength === expected.byteLength && timingSafeEqual(received, expected);
}

/** A signed timestamp: its text as sent (what the sender signed) and its value in Unix seconds. */
export interface SignedTimestamp {
  header: string;
  text: string;
  seconds: number;
}

/** Providers' default tolerance (Stripe, Slack, Standard Webhooks): five minutes. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

/** Signature timestamps are Unix seconds; null for anything else. */
export function parseUnixSeconds(text: string): number | null {
  return /^\d{1,12}$/.test(text) ? Number(text) : null;
}

/** The timestamp a header carries, or why it cannot be used. */
export function readTimestamp(headers: Headers, name: string): SignedTimestamp | SignatureCheck {
  const text = headerValue(headers, name);
  if (!text) return missingHeader(name);
  const seconds = parseUnixSeconds(text);
  return seconds === null ? malformedHeader(name, "a Unix time in seconds") : { header: name, text, seconds };
}

/** Tells a failure from the value a reader returns when it succeeds. */
export const isCheck = <T extends object>(value: T | SignatureCheck): value is SignatureCheck => "ok" in value;

/**
 * The outcome once the digests are compared. The signature comes first, so
 * `stale_timestamp` means a genuine delivery sent too long ago (a replay or a late
 * retry). Both directions count: a timestamp too far ahead is as suspect as one too old.
 */
export function verdict(
  signatureHeader: string,
  matched: boolean,
  signedAt?: { timestamp: SignedTimestamp; toleranceSeconds: number; now: Date | undefined },
): SignatureCheck {
  if (!matched) return mismatch(signatureHeader);
  if (!signedAt) return VERIFIED;
  const { timestamp, toleranceSeconds, now } = signedAt;
  const drift = Math.abs((now ?? new Date()).getTime() / 1000 - timestamp.seconds);
  return drift > toleranceSeconds
    ? failure("stale_timestamp", `${timestamp.header} is more than ${toleranceSeconds} seconds away from now`)
    : VERIFIED;
}
