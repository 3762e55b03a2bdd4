import type { Principal } from "../caller.ts";
import { DomainError } from "../errors.ts";
import { unixSeconds } from "../time.ts";
import type { AccountsDeps } from "./deps.ts";
import { verifyPassword } from "./passwords.ts";
import { requireSignedInUser } from "./permissions.ts";
import { signInGuard } from "./rate-limits.ts";
import { spendTotpCode } from "./totp.ts";

// `POST /accounts/reauthenticate`: how a session becomes recently authenticated (see recent-auth.ts).

export const recentAuthDescription = `Takes the caller's \`password\` or a \`totp_code\` and marks the session as recently authenticated. Enrolling TOTP or a passkey, removing one's own passkeys and turning TOTP off (\`DELETE /accounts/totp\`) need a sign-in or a re-authentication within \`RECENT_AUTH_SECONDS\` (10 minutes) in the same session, else they answer 403; a fresh sign-in counts too. Answers a new access token of the session whose \`auth_time\` claim (Unix seconds, in every access token) says when that was; the current token works for those changes as well. Needs a Bearer token, not an API key. Wrong answers count like failed sign-ins.`;

export interface ReauthenticateInput {
  password?: string;
  totp_code?: string;
}

/**
 * Proves again who the caller is, with their password or a TOTP code, and stamps the
 * session: second-factor changes are allowed for `recentAuthSeconds`. Answers a new access
 * token for the session, carrying the new `auth_time`. Wrong answers count like sign-in failures.
 */
export async function reauthenticate(
  deps: AccountsDeps,
  principal: Principal,
  input: ReauthenticateInput,
  ip: string,
): Promise<{ auth_token: string; auth_time: number }> {
  requireSignedInUser(principal);
  const sessionId = principal.sessionId;
  if (!sessionId) throw new DomainError("forbidden", "this operation needs a signed-in user (Bearer token)");
  const user = await deps.db
    .selectFrom("users")
    .select(["email", "password_hash"])
    .where("id", "=", principal.userId)
    .executeTakeFirstOrThrow();
  const guard = signInGuard(deps, input.password !== undefined ? "login" : "mfa", { email: user.email, ip });
  await guard.admit();
  const proven =
    input.password !== undefined
      ? await verifyPassword(deps.config.passwordHash, input.password, user.password_hash)
      : input.totp_code !== undefined && (await spendTotpCode(deps, principal.userId, input.totp_code));
  if (!proven) {
    await guard.failed();
    throw new DomainError(
      "unauthorized",
      input.password !== undefined ? "wrong password" : "invalid or already used code",
    );
  }
  await guard.succeeded();
  const now = new Date();
  await deps.db.updateTable("auth_sessions").set({ authenticated_at: now }).where("id", "=", sessionId).execute();
  const authTime = unixSeconds(now);
  const authToken = await deps.accessTokens.issue({
    accountId: principal.accountId,
    userId: principal.userId,
    sessionId,
    authTime,
  });
  return { auth_token: authToken, auth_time: authTime };
}
