/**
 * Why a queued run waits, as `runs.queue_reason` stores it: a code, so that rewording what the
 * API says never strands a waiting run. The run view renders it (`queueReasonText`).
 */
export const QUEUE_REASONS = {
  /** Waiting for one of its flow's concurrency slots. */
  slot: "waiting for concurrency slot",
  /** Stored by releases that queued a run to take a freed slot (one now holds it as it is handed over); still shown. */
  slot_woken: "waiting for concurrency slot",
  /** Waiting for its turn in the flow's throttle window. */
  throttle: "waiting for throttle window",
  /** Waiting for its debounce period to pass with no later start of its key. */
  debounce: "waiting for debounce period",
  /** Holding its key's open batch: waiting for more starts, or for the batch's timeout. */
  batch: "collecting a batch",
} as const;

export type QueueReason = keyof typeof QUEUE_REASONS;

/** What the API says for a stored reason (a value an older release stored is shown as it is). */
export function queueReasonText(stored: string | null): string | null {
  if (stored === null) return null;
  return Object.hasOwn(QUEUE_REASONS, stored) ? QUEUE_REASONS[stored as QueueReason] : stored;
}
