import { type Broker, PLATFORM_SCOPE } from "../broker/port.ts";
import type { AuthConfig } from "../config.ts";
import { DomainError } from "../errors.ts";
import type { Logger } from "../logger.ts";

/**
 * Sign-in limits. Only failures count (a wrong password, a wrong second factor), in three
 * tallies per kind of attempt, each over `windowSeconds` from its first failure:
 *
 * - per email and client address: past `perPair` failures that pair is refused (429), as
 *   Auth0's brute-force protection does; a success from the pair clears its tally;
 * - per client address, across emails: past `perIp` failures the address is refused (429),
 *   which stops one address spraying passwords over many emails;
 * - per email, across addresses: past `perEmail` failures sign-in for that email is slowed
 *   down by `slowdownMs`, never refused, so that nobody can lock a user out by failing on
 *   purpose from elsewhere.
 *
 * Successful sign-ins count nowhere. The tallies live in the broker's KV (platform scope),
 * so every process of a deployment shares them.
 */
export type AttemptKind = "login" | "mfa";

type Limits = AuthConfig["loginLimits"];

const BUCKET = "sign-in-failures";
const MAX_WRITE_ATTEMPTS = 8;

interface Tally {
  count: number;
  /** When the window started (the first failure), epoch ms. */
  since: number;
}

function parseTally(value: string | undefined): Tally | undefined {
  if (!value) return undefined;
  try {
    const tally = JSON.parse(value) as Tally;
    return Number.isFinite(tally.count) && Number.isFinite(tally.since) ? tally : undefined;
  } catch {
    return undefined;
  }
}

async function readTally(broker: Broker, key: string): Promise<Tally | undefined> {
  return parseTally((await broker.kvGet(PLATFORM_SCOPE, BUCKET, key))?.value);
}

/** Adds one failure; the key expires with its window. Concurrent failures all count (compare-and-set). */
async function addFailure(broker: Broker, key: string, windowSeconds: number): Promise<void> {
  for (let attempt = 0; attempt < MAX_WRITE_ATTEMPTS; attempt++) {
    const entry = await broker.kvGet(PLATFORM_SCOPE, BUCKET, key);
    const now = Date.now();
    const current = parseTally(entry?.value);
    const tally = current ? { count: current.count + 1, since: current.since } : { count: 1, since: now };
    const ttlSeconds = Math.max(1, windowSeconds - Math.floor((now - tally.since) / 1000));
    const written = await broker.kvCompareAndSet(
      PLATFORM_SCOPE,
      BUCKET,
      key,
      JSON.stringify(tally),
      current ? (entry?.revision ?? 0) : 0,
      { ttlSeconds },
    );
    if (written.ok) return;
  }
}

function retryAfter(tally: Tally, windowSeconds: number): number {
  return Math.max(1, Math.ceil((tally.since + windowSeconds * 1000 - Date.now()) / 1000));
}

export function tooManyAttempts(retryAfterSeconds: number): DomainError {
  return new DomainError("rate_limited", "too many attempts; try again later", {
    retryAfterSeconds: Math.max(retryAfterSeconds, 1),
  });
}

export interface SignInGuard {
  /** 429 when the pair or the address has failed too often; waits out the email's slowdown. */
  admit(): Promise<void>;
  /** Counts a failure against the pair, the address and the email. */
  failed(): Promise<void>;
  /** Clears the pair's failures. */
  succeeded(): Promise<void>;
}

export function signInGuard(
  deps: { broker: Broker; config: { loginLimits: Limits }; logger: Logger },
  kind: AttemptKind,
  who: { email: string; ip: string },
): SignInGuard {
  const { broker } = deps;
  const limits = deps.config.loginLimits;
  const keys = {
    pair: `${kind}:pair:${who.ip}:${who.email}`,
    ip: `${kind}:ip:${who.ip}`,
    email: `${kind}:email:${who.email}`,
  };
  return {
    async admit() {
      const [pair, ip, email] = await Promise.all([
        readTally(broker, keys.pair),
        readTally(broker, keys.ip),
        readTally(broker, keys.email),
      ]);
      if (ip && ip.count >= limits.perIp) throw tooManyAttempts(retryAfter(ip, limits.windowSeconds));
      if (pair && pair.count >= limits.perPair) throw tooManyAttempts(retryAfter(pair, limits.windowSeconds));
      if (email && email.count >= limits.perEmail && limits.slowdownMs > 0) {
        deps.logger.warn({ kind, failures: email.count, ms: limits.slowdownMs }, "sign-in slowed down for an email");
        await Bun.sleep(limits.slowdownMs);
      }
    },
    async failed() {
      await Promise.all([
        addFailure(broker, keys.pair, limits.windowSeconds),
        addFailure(broker, keys.ip, limits.windowSeconds),
        addFailure(broker, keys.email, limits.windowSeconds),
      ]);
    },
    async succeeded() {
      await broker.kvDelete(PLATFORM_SCOPE, BUCKET, keys.pair);
    },
  };
}

/** Sign-ups: every attempt counts against the client address (they are not failures, but each makes an account). */
export async function admitSignup(broker: Broker, limits: Limits, ip: string): Promise<void> {
  const decision = await broker.allow(PLATFORM_SCOPE, `signup:ip:${ip}`, limits.perIp, limits.windowSeconds);
  if (!decision.allowed) throw tooManyAttempts(decision.retryAfterSeconds);
}
