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
  const [byEmail, byIp] = await Promise.all([
    broker.allow(PLATFORM_SCOPE, `${kind}:email:${who.email}`, limits.perEmail, limits.windowSeconds),
    broker.allow(PLATFORM_SCOPE, `${kind}:ip:${who.ip}`, limits.perIp, limits.windowSeconds),
  ]);
  if (byEmail.allowed && byIp.allowed) return;
  const retryAfter = Math.max(byEmail.retryAfterSeconds, byIp.retryAfterSeconds, 1);
  throw new DomainError("rate_limited", "too many attempts; try again later", retryAfter);
}
