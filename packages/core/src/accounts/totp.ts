import type { Database } from "@platform/db";
import type { Kysely } from "kysely";
import { Secret, TOTP } from "otpauth";
import type { Principal } from "../caller.ts";
import { DomainError } from "../errors.ts";
import { openSealed } from "../sealing.ts";
import type { AccountsDeps } from "./deps.ts";
import { signInGuard } from "./rate-limits.ts";
import { requireRecentAuthentication } from "./recent-auth.ts";

/** RFC 6238 as authenticator apps expect it by default. */
const TOTP_PARAMETERS = { algorithm: "SHA1", digits: 6, period: 30 } as const;
/** Codes of the previous and next 30-second step are accepted too (clock drift). */
const DRIFT_STEPS = 1;

/**
 * The time step a code belongs to, or null when it matches none near `now`. Steps only
 * grow, so remembering the last accepted one makes each code single-use.
 */
export function stepOfCode(secretBase32: string, code: string, now = Date.now()): number | null {
  const delta = TOTP.validate({
    ...TOTP_PARAMETERS,
    token: code,
    secret: Secret.fromBase32(secretBase32),
    timestamp: now,
    window: DRIFT_STEPS,
  });
  return delta === null ? null : TOTP.counter({ period: TOTP_PARAMETERS.period, timestamp: now }) + delta;
}

export async function totpEnabled(db: Kysely<Database>, userId: string): Promise<boolean> {
  const row = await db
    .selectFrom("user_totp")
    .select("user_id")
    .where("user_id", "=", userId)
    .where("enabled_at", "is not", null)
    .executeTakeFirst();
  return row !== undefined;
}

/** TOTP secrets are sealed at rest, bound to their user. */
export const totpSealingContext = (userId: string) => `totp:${userId}`;

const openTotpSecret = (deps: Pick<AccountsDeps, "sealer">, sealed: string, userId: string) =>
  openSealed(deps.sealer, sealed, totpSealingContext(userId), `TOTP secret of user ${userId}`);

const alreadyEnabled = () => new DomainError("conflict", "TOTP is already enabled");

/**
 * Starts (or restarts) TOTP enrolment: a new secret, not required at login until a
 * code from it is confirmed with `confirmTotpSetup`.
 */
export async function beginTotpSetup(
  deps: AccountsDeps,
  principal: Principal,
): Promise<{ secret: string; otpauth_url: string }> {
  await requireRecentAuthentication(deps, principal);
  const user = await deps.db
    .selectFrom("users")
    .leftJoin("user_totp", "user_totp.user_id", "users.id")
    .select(["users.email", "user_totp.enabled_at"])
    .where("users.id", "=", principal.userId)
    .executeTakeFirstOrThrow();
  if (user.enabled_at) throw alreadyEnabled();
  const totp = new TOTP({
    ...TOTP_PARAMETERS,
    issuer: deps.config.webauthn.rpName,
    label: user.email,
    secret: new Secret({ size: 20 }),
  });
  const secret = totp.secret.base32;
  const sealed = deps.sealer.seal(secret, totpSealingContext(principal.userId));
  const written = await deps.db
    .insertInto("user_totp")
    .values({ user_id: principal.userId, secret: sealed })
    .onConflict((conflict) =>
      conflict
        .column("user_id")
        .doUpdateSet({ secret: sealed, last_used_step: null, created_at: new Date() })
        .where("user_totp.enabled_at", "is", null),
    )
    .returning("user_id")
    .executeTakeFirst();
  if (!written) throw alreadyEnabled();
  return { secret, otpauth_url: totp.toString() };
}

/**
 * Enables TOTP once a code from the pending secret proves the user's app has it. Guesses
 * count against the user's second-factor attempt limit.
 */
export async function confirmTotpSetup(
  deps: AccountsDeps,
  principal: Principal,
  code: string,
  ip: string,
): Promise<void> {
  await requireRecentAuthentication(deps, principal);
  const row = await deps.db
    .selectFrom("users")
    .leftJoin("user_totp", "user_totp.user_id", "users.id")
    .select(["users.email", "user_totp.secret", "user_totp.enabled_at"])
    .where("users.id", "=", principal.userId)
    .executeTakeFirstOrThrow();
  const guard = signInGuard(deps, "mfa", { email: row.email, ip });
  await guard.admit();
  if (!row.secret)
    throw new DomainError("validation_error", "no TOTP setup in progress; call POST /accounts/totp/setup first");
  if (row.enabled_at) throw alreadyEnabled();
  const step = stepOfCode(openTotpSecret(deps, row.secret, principal.userId), code);
  if (step === null) {
    await guard.failed();
    throw new DomainError("validation_error", "invalid code");
  }
  await guard.succeeded();
  const enabled = await deps.db
    .updateTable("user_totp")
    .set({ enabled_at: new Date(), last_used_step: step })
    .where("user_id", "=", principal.userId)
    .where("secret", "=", row.secret)
    .where("enabled_at", "is", null)
    .returning("user_id")
    .executeTakeFirst();
  if (!enabled) throw new DomainError("conflict", "the TOTP setup changed meanwhile; start again");
}

/** Accepts a code of the user's enabled TOTP once; a replayed or older code is refused. */
export async function spendTotpCode(
  deps: Pick<AccountsDeps, "db" | "sealer">,
  userId: string,
  code: string,
): Promise<boolean> {
  const { db } = deps;
  const row = await db
    .selectFrom("user_totp")
    .select("secret")
    .where("user_id", "=", userId)
    .where("enabled_at", "is not", null)
    .executeTakeFirst();
  if (!row) return false;
  const step = stepOfCode(openTotpSecret(deps, row.secret, userId), code);
  if (step === null) return false;
  const spent = await db
    .updateTable("user_totp")
    .set({ last_used_step: step })
    .where("user_id", "=", userId)
    .where((eb) => eb.or([eb("last_used_step", "is", null), eb("last_used_step", "<", step)]))
    .returning("user_id")
    .executeTakeFirst();
  return spent !== undefined;
}

/** Turns TOTP off (a recent sign-in needed): sign-in no longer asks for a code. 404 when it was not enabled. */
export async function disableTotp(deps: AccountsDeps, principal: Principal): Promise<void> {
  await requireRecentAuthentication(deps, principal);
  const removed = await deps.db
    .deleteFrom("user_totp")
    .where("user_id", "=", principal.userId)
    .where("enabled_at", "is not", null)
    .returning("user_id")
    .executeTakeFirst();
  if (!removed) throw new DomainError("not_found", "TOTP is not enabled");
}
