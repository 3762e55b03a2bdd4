import type { z } from "zod";
import { DomainError } from "../errors.ts";
import { authResultFor, badCredentials, enrolledMethods } from "./auth-results.ts";
import type { AccountsDeps } from "./deps.ts";
import { joinThroughInvitation } from "./invitations.ts";
import { consumeMfaChallenge, createMfaChallenge, findMfaChallenge } from "./mfa-challenges.ts";
import { checkPasskeyAssertion } from "./passkeys.ts";
import { verifyPassword } from "./passwords.ts";
import { signInGuard } from "./rate-limits.ts";
import type { AuthResult, MfaRequired, passkeyAssertion } from "./schemas.ts";
import { startSession } from "./sessions.ts";
import { spendTotpCode } from "./totp.ts";

/**
 * The account a password login signs into when the user belongs to several: the one
 * they own, else the one they joined first.
 */
async function accountToSignInto(deps: AccountsDeps, userId: string): Promise<string | undefined> {
  const membership = await deps.db
    .selectFrom("memberships")
    .select("account_id")
    .where("user_id", "=", userId)
    .orderBy((eb) => eb.case().when("role", "=", "owner").then(0).else(1).end())
    .orderBy("created_at")
    .orderBy("account_id")
    .executeTakeFirst();
  return membership?.account_id;
}

/**
 * Email and password. An unknown email and a wrong password answer the same 401 after the
 * same work. With a second factor enrolled the answer is an MFA token instead of tokens.
 */
export async function loginWithPassword(
  deps: AccountsDeps,
  input: { email: string; password: string },
  ip: string,
): Promise<AuthResult | MfaRequired> {
  const guard = signInGuard(deps, "login", { email: input.email, ip });
  await guard.admit();
  const user = await deps.db
    .selectFrom("users")
    .select(["id", "password_hash"])
    .where("email", "=", input.email)
    .executeTakeFirst();
  const accountId =
    (await verifyPassword(deps.config.passwordHash, input.password, user?.password_hash)) && user
      ? await accountToSignInto(deps, user.id)
      : undefined;
  if (!user || !accountId) {
    await guard.failed();
    throw badCredentials();
  }
  await guard.succeeded();
  const member = { accountId, userId: user.id };
  const methods = await enrolledMethods(deps, user.id);
  if (methods.length > 0) {
    return { mfa_required: true, mfa_token: await createMfaChallenge(deps, member), methods };
  }
  return authResultFor(deps, member, await startSession(deps, member));
}

export interface SecondFactorInput {
  mfa_token: string;
  totp_code?: string;
  passkey?: z.infer<typeof passkeyAssertion>;
}

/** Completes a password login with a TOTP code or a passkey assertion. */
export async function loginWithSecondFactor(
  deps: AccountsDeps,
  input: SecondFactorInput,
  ip: string,
): Promise<AuthResult> {
  const pending = await findMfaChallenge(deps.db, input.mfa_token);
  const guard = signInGuard(deps, "mfa", { email: pending.email, ip });
  await guard.admit();
  const proven = input.passkey
    ? await checkPasskeyAssertion(deps, pending, input.passkey)
    : input.totp_code !== undefined && (await spendTotpCode(deps, pending.userId, input.totp_code));
  if (!proven) {
    await guard.failed();
    throw new DomainError("unauthorized", input.passkey ? "passkey not accepted" : "invalid or already used code");
  }
  await guard.succeeded();
  await consumeMfaChallenge(deps.db, pending);
  const member = pending.invitationId
    ? await joinThroughInvitation(deps, pending.invitationId, pending.userId)
    : { accountId: pending.accountId, userId: pending.userId };
  return authResultFor(deps, member, await startSession(deps, member));
}
