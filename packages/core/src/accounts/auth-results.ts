import { DomainError } from "../errors.ts";
import { accountView } from "./accounts.ts";
import type { AccountsDeps } from "./deps.ts";
import { hasPasskeys } from "./passkeys.ts";
import type { AuthResult, MfaMethod } from "./schemas.ts";
import type { Member, SessionTokens } from "./sessions.ts";
import { totpEnabled } from "./totp.ts";

// What a sign-in answers, shared by the sign-in routes and accepting an invitation.

/** The second factors a user has enrolled, in the order clients should offer them. */
export async function enrolledMethods(deps: AccountsDeps, userId: string): Promise<MfaMethod[]> {
  const [totp, passkey] = await Promise.all([totpEnabled(deps.db, userId), hasPasskeys(deps.db, userId)]);
  return [...(totp ? (["totp"] as const) : []), ...(passkey ? (["passkey"] as const) : [])];
}

/** The spec's Authentication result for a member who now holds `tokens`. */
export async function authResultFor(deps: AccountsDeps, member: Member, tokens: SessionTokens): Promise<AuthResult> {
  const [account, methods] = await Promise.all([
    accountView(deps.db, member.accountId),
    enrolledMethods(deps, member.userId),
  ]);
  return {
    refresh_token: tokens.refresh_token,
    auth_token: tokens.auth_token,
    passkey_enabled: methods.includes("passkey"),
    totp_enabled: methods.includes("totp"),
    account,
  };
}

export const badCredentials = () => new DomainError("unauthorized", "invalid email or password");
