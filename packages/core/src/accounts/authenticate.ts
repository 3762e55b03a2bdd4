import type { Credential, Principal } from "../context.ts";
import { DomainError } from "../errors.ts";
import type { Authenticator } from "../services.ts";
import { resolveApiKey } from "./api-keys.ts";
import type { AccountsDeps } from "./deps.ts";
import { pathAllowed } from "./path-patterns.ts";

const invalidCredential = () => new DomainError("unauthorized", "invalid credential");

/**
 * Verifies a Bearer access token or an API key on every request. Besides the token's
 * signature, one indexed query checks that the user is still a member of the account
 * (a removed user is refused at once) and that the sign-in session was not revoked
 * (logout, refresh-token reuse). An API key restricted to paths is refused (403) on others.
 */
export function createAuthenticator(deps: Pick<AccountsDeps, "db" | "accessTokens">): Authenticator {
  async function bearer(token: string): Promise<Principal> {
    const claims = await deps.accessTokens.verify(token);
    const membership = await deps.db
      .selectFrom("memberships")
      .innerJoin("auth_sessions", (join) =>
        join
          .onRef("auth_sessions.account_id", "=", "memberships.account_id")
          .onRef("auth_sessions.user_id", "=", "memberships.user_id"),
      )
      .select("memberships.role")
      .where("auth_sessions.id", "=", claims.sessionId)
      .where("auth_sessions.revoked_at", "is", null)
      .where("memberships.account_id", "=", claims.accountId)
      .where("memberships.user_id", "=", claims.userId)
      .executeTakeFirst();
    if (!membership) throw invalidCredential();
    return { accountId: claims.accountId, userId: claims.userId, role: membership.role };
  }

  async function apiKey(key: string, path: string): Promise<Principal> {
    const resolved = await resolveApiKey(deps.db, key);
    if (!resolved) throw invalidCredential();
    if (resolved.allowedPaths && !pathAllowed(resolved.allowedPaths, path)) {
      throw new DomainError("forbidden", "this API key is not allowed on this path");
    }
    return resolved.principal;
  }

  return async (credential: Credential, target: { path: string }): Promise<Principal> => {
    if (!credential) throw new DomainError("unauthorized", "missing credential");
    return credential.scheme === "bearer" ? bearer(credential.token) : apiKey(credential.key, target.path);
  };
}
