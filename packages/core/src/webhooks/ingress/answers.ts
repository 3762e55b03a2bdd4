import { isDomainError, toHttpFailure } from "../../errors.ts";
import type { Services } from "../../services.ts";

/** How long a sender is asked to wait before retrying a delivery the platform could not take. */
export const RETRY_AFTER_SECONDS = 5;

export function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return Response.json(body, { status, headers });
}

/** A DomainError the ingress raised on purpose (413, 415, 400, ...) as its answer; anything else is not one. */
export function answerDomainError(error: unknown): Response | null {
  if (!isDomainError(error) || error.code === "internal_error" || error.code === "unavailable") return null;
  const failure = toHttpFailure(error.code, "webhooks", error.message, error.retryAfterSeconds, error.headers);
  return json(failure.status, failure.body, failure.headers);
}

/**
 * The answer when the delivery could not be recorded (the database or the Broker is down,
 * or failed): 503 with Retry-After, so that the sender delivers again later. Logged with
 * the cause; the sender learns nothing of it.
 */
export function serviceUnavailable(services: Pick<Services, "logger">, error: unknown): Response {
  services.logger.error({ err: error }, "webhook delivery could not be recorded");
  return json(
    503,
    { error: "the delivery could not be recorded; retry later" },
    { "retry-after": String(RETRY_AFTER_SECONDS) },
  );
}
