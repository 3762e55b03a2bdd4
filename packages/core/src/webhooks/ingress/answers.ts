import { answerError, DomainError, ERRORS, isDomainError } from "../../errors.ts";
import type { Logger } from "../../logger.ts";

/** How long a sender is asked to wait before delivering again what the platform could not take. */
export const RETRY_AFTER_SECONDS = 5;

/**
 * The ingress's answer to an error: what it refused on purpose (400, 401, 413, 415, ...)
 * as the error table says; anything that kept the delivery from being recorded (the
 * database or the Broker down or failing, an unexpected error) as 503 with Retry-After, so
 * that the sender delivers again: never 200 for an event that was not recorded. The cause
 * is logged; the sender learns nothing of it.
 */
export function answerDeliveryError(logger: Logger, error: unknown, requestId?: string): Response {
  const refused = isDomainError(error) && ERRORS[error.code].status < 500;
  const answered = refused
    ? error
    : new DomainError("unavailable", "the delivery could not be recorded; retry later", {
        retryAfterSeconds: RETRY_AFTER_SECONDS,
        cause: error,
      });
  return answerError(answered, { area: "ingress", logger, requestId });
}
