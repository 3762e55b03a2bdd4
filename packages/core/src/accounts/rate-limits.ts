import { type Broker, PLATFORM_SCOPE } from "../broker/port.ts";
import type { AuthConfig } from "../config.ts";
import { DomainError } from "../errors.ts";

/** What is being limited: password guesses, second-factor guesses, new accounts. */
export type AttemptKind = "login" | "mfa" | "signup";

/**
 * Counts one sign-in attempt against the email's and the client IP's budgets (pre-login,
 * so in the platform scope) and refuses it with 429 and `Retry-After` once either is spent.
 */
export async function admitAttempt(
  broker: Broker,
  limits: AuthConfig["loginLimits"],
  kind: AttemptKind,
  who: { email: string; ip: string },
): Promise<void> {
  // The address first: a client it stops must not also spend the email's budget, or a
  // blocked attacker could still lock the owner of that email out.
  const byIp = await broker.allow(PLATFORM_SCOPE, `${kind}:ip:${who.ip}`, limits.perIp, limits.windowSeconds);
  if (!byIp.allowed) throw tooManyAttempts(byIp.retryAfterSeconds);
  const byEmail = await broker.allow(
    PLATFORM_SCOPE,
    `${kind}:email:${who.email}`,
    limits.perEmail,
    limits.windowSeconds,
  );
  if (!byEmail.allowed) throw tooManyAttempts(byEmail.retryAfterSeconds);
}

function tooManyAttempts(retryAfterSeconds: number): DomainError {
  return new DomainError("rate_limited", "too many attempts; try again later", Math.max(retryAfterSeconds, 1));
}
