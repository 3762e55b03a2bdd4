import { z } from "zod";

/** A time as the API shows it: whole seconds since the Unix epoch. */
export const unixSeconds = (date: Date): number => Math.floor(date.getTime() / 1000);

/**
 * The times a request may name: the years 0001 to 9999, ISO 8601's four-digit years, UTC.
 * Within them every time is one PostgreSQL's timestamptz holds (4713 BC to 294276 AD) and
 * one a run id (UUIDv7: 48 bits of milliseconds from 1970) can be compared with; outside,
 * JavaScript still reads expanded years (`-004714-…`, `+010000-…`) the database refuses.
 */
export const TIME_INPUT_RANGE = {
  earliest: Date.parse("0001-01-01T00:00:00.000Z"),
  latest: Date.parse("9999-12-31T23:59:59.999Z"),
  rule: "must be a time in the years 0001 to 9999",
} as const;

/** A time in a request: ISO 8601 (`2026-11-26T07:00:00Z`), within TIME_INPUT_RANGE, as a Date. */
export const timeInput = z.string().transform((text, ctx) => {
  const epochMs = Date.parse(text);
  if (!Number.isFinite(epochMs)) {
    ctx.addIssue({ code: "custom", message: "must be an ISO 8601 time, such as 2026-11-26T07:00:00Z" });
    return z.NEVER;
  }
  if (epochMs < TIME_INPUT_RANGE.earliest || epochMs > TIME_INPUT_RANGE.latest) {
    ctx.addIssue({ code: "custom", message: TIME_INPUT_RANGE.rule });
    return z.NEVER;
  }
  return new Date(epochMs);
});
