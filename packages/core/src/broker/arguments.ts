import { DomainError } from "../errors.ts";
import { MAX_NOTIFICATION_BYTES, type ReadGroupOptions, type StreamQuota, type TrimOptions } from "./port.ts";

/** Longest scope, stream, group, consumer, bucket, key, counter or channel name the broker accepts. */
export const MAX_NAME_LENGTH = 1024;

/** Rejects an empty or over-long name with `validation_error`, naming what it was. */
export function assertName(what: string, value: string): void {
  if (typeof value !== "string" || value.length === 0 || value.length > MAX_NAME_LENGTH) {
    throw new DomainError(
      "validation_error",
      `${what} must be a non-empty string of at most ${MAX_NAME_LENGTH} characters`,
    );
  }
}

export function assertNames(names: Record<string, string>): void {
  for (const [what, value] of Object.entries(names)) assertName(what, value);
}

/** Rejects anything but a whole number in `[min, max]`. */
export function assertInteger(what: string, value: number, min: number, max = Number.MAX_SAFE_INTEGER): void {
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new DomainError("validation_error", `${what} must be a whole number between ${min} and ${max}`);
  }
}

/** Rejects a negative or non-finite number. */
export function assertNonNegative(what: string, value: number): void {
  if (!Number.isFinite(value) || value < 0) {
    throw new DomainError("validation_error", `${what} must be a non-negative number`);
  }
}

/** Whole seconds (at least 1) a denied caller should wait, from milliseconds. */
export function retryAfterSeconds(waitMs: number): number {
  return Math.max(1, Math.ceil(waitMs / 1000));
}

/** The largest idle time adapters set when releasing an entry (ten years); keeps timestamps positive. */
export const MAX_IDLE_MS = 10 * 365 * 24 * 3600 * 1000;

/** Rejects a notification message larger than every adapter can carry. */
export function assertNotificationSize(message: string): void {
  if (Buffer.byteLength(message, "utf8") > MAX_NOTIFICATION_BYTES) {
    throw new DomainError("validation_error", `a notification message is at most ${MAX_NOTIFICATION_BYTES} bytes`);
  }
}

/** A group read's options with their defaults, checked the same way by every adapter. */
export function groupReadOptions(options: ReadGroupOptions): { count: number; blockMs: number } {
  const count = options.count ?? 1;
  const blockMs = options.blockMs ?? 0;
  assertInteger("count", count, 1, 10_000);
  assertInteger("blockMs", blockMs, 0);
  return { count, blockMs };
}

/** Rejects trim limits that are not whole numbers of at least 0. */
export function assertTrimOptions(options: TrimOptions): void {
  if (options.maxLength !== undefined) assertInteger("maxLength", options.maxLength, 0);
  if (options.maxAgeMs !== undefined) assertInteger("maxAgeMs", options.maxAgeMs, 0);
}

/** Rejects quotas that are not whole numbers of at least 0. */
export function assertQuota(quota: StreamQuota): void {
  if (quota.maxBytes !== undefined) assertInteger("maxBytes", quota.maxBytes, 0);
  if (quota.maxEntries !== undefined) assertInteger("maxEntries", quota.maxEntries, 0);
}

/** A windowed take's arguments, checked the same way by every adapter; answers the window in ms. */
export function assertTake(limit: number, windowSeconds: number, count: number): number {
  assertInteger("limit", limit, 1);
  assertInteger("count", count, 0, 1_000_000);
  const windowMs = Math.round(windowSeconds * 1000);
  assertInteger("windowSeconds in milliseconds", windowMs, 1);
  return windowMs;
}
