/**
 * Why a step attempt failed, in words fit for the run record (`steps.<name>.error`).
 * `retryable: false` says another attempt would fail the same way (bad payload, a refused
 * address, a user's syntax error or runaway loop), so the engine may skip the remaining
 * attempts; `true` (the default) lets `options.attempts` try again after the backoff.
 */
export class StepFailure extends Error {
  constructor(
    message: string,
    readonly retryable = true,
  ) {
    super(message);
    this.name = "StepFailure";
  }
}

export function isStepFailure(error: unknown): error is StepFailure {
  return error instanceof StepFailure;
}
