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

/** Constant-time comparison; both are digests of one algorithm, so their length is no secret. */
export function digestsEqual(received: Uint8Array, expected: Uint8Array): boolean {
  return received.byteLength === expected.byteLength && timingSafeEqual(received, expected);
}

/** Signature timestamps are Unix seconds; null for anything else. */
export function parseUnixSeconds(text: string): number | null {
  return /^\d{1,12}$/.test(text) ? Number(text) : null;
}

/** Both directions count: a timestamp too far ahead is as suspect as one too old. */
export function isStale(timestamp: number, now: Date | undefined, toleranceSeconds: number): boolean {
  return Math.abs((now ?? new Date()).getTime() / 1000 - timestamp) > toleranceSeconds;
}

export const staleTimestamp = (name: string, toleranceSeconds: number) =>
  failure("stale_timestamp", `${name} is more than ${toleranceSeconds} seconds away from now`);

/** Providers' default tolerance (Stripe, Slack, Standard Webhooks): five minutes. */
export const DEFAULT_TOLERANCE_SECONDS = 300;
