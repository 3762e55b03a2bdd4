import { z } from "zod";
import { StepFailure } from "./step-failure.ts";

/** The longest `delay`: a year. */
export const MAX_DELAY_MS = 365 * 24 * 3600 * 1000;

const delayPayload = z.union([
  z.strictObject({ ms: z.number().int().min(0).max(MAX_DELAY_MS) }),
  z.strictObject({ until: z.iso.datetime({ offset: true }) }),
]);

/**
 * When a `delay` step ends: its payload is `{ms}` (a whole number of milliseconds, at most a
 * year) or `{until}` (an ISO 8601 date-time with its offset; one in the past ends at once).
 * Throws a non-retryable failure for anything else.
 */
export function delayUntil(payload: unknown): Date {
  const parsed = delayPayload.safeParse(payload);
  if (!parsed.success) {
    throw new StepFailure(
      `invalid payload: a delay takes {"ms": 0-${MAX_DELAY_MS}} or {"until": "<ISO 8601 date-time>"}`,
      false,
    );
  }
  return "ms" in parsed.data ? new Date(Date.now() + parsed.data.ms) : new Date(parsed.data.until);
}
