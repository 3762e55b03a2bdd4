import type { Credential, Principal } from "../caller.ts";
import { DomainError } from "../errors.ts";
import { resolveApiKey } from "./api-keys.ts";
import type { AccountsDeps } from "./deps.ts";
import { hashOpaqueToken } from "./opaque-tokens.ts";
import { type AccessTarget, requestAllowed } from "./path-patterns.ts";

const invalidCredential = () => new DomainError("unauthorized", "invalid credential");

/**
 * Verifies a Bearer access token or an API key on every request. Besides the token's
 * signature, one indexed query checks that the user is still a member of the account
 * (a removed user is refused at once) and that the sign-in session was not revoked
 * (logout, refresh-token reuse); its answer is kept in the per-process auth cache, which
 * every revocation empties at once in every process. An API key restricted to paths is
 * refused (403) on others, unless the caller checks them itself (a null target).
 */
export function createAuthenticator(
  deps: Pick<AccountsDeps, "db" | "accessTokens" | "authCache">,
): (credential: Credential, target: AccessTarget | null) => Promise<Principal> {
  const { authCache } = deps;

  async function bearer(token: string): Promise<Principal> {
    const claims = await deps.accessTokens.verify(token);
    const cached = authCache.session(claims.sessionId);
    if (cached?.accountId === claims.accountId && cached.userId === claims.userId) return cached;
    const ticket = authCache.ticket();
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
    const principal: Principal = {
      accountId: claims.accountId,
      userId: claims.userId,
      role: membership.role,
      sessionId: claims.sessionId,
    };
    authCache.rememberSession(ticket, claims.sessionId, principal);
    return principal;
  }

  async function apiKey(key: string, target: AccessTarget | null): Promise<Principal> {
    const keyHash = hashOpaqueToken(key);
    let resolved = authCache.apiKey(keyHash);
    if (!resolved) {
      const ticket = authCache.ticket();
      resolved = await resolveApiKey(deps.db, keyHash);
      if (!resolved) throw invalidCredential();
      authCache.rememberApiKey(ticket, keyHash, resolved);
    }
    if (resolved.allowedPaths && target !== null && !requestAllowed(resolved.allowedPaths, target)) {
      throw new DomainError("forbidden", "this API key is not allowed on this path");
    }
    return { ...resolved.principal, allowedPaths: resolved.allowedPaths };
  }

  /**
   * `target` null: the caller checks the key's `allowed_paths` (the principal's `allowedPaths`)
   * per operation itself, as the MCP endpoint does for each tool (a flow's start path).
   */
  return async (credential: Credential, target: AccessTarget | null): Promise<Principal> => {
    if (!credential) throw new DomainError("unauthorized", "missing credential");
    return credential.scheme === "bearer" ? bearer(credential.token) : apiKey(credential.key, target);
  };
}
