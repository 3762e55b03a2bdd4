import type { Principal } from "../caller.ts";
import { DomainError } from "../errors.ts";
import type { AccountsDeps } from "./deps.ts";
import { requireSignedInUser } from "./permissions.ts";

/**
 * Recent authentication ("sudo mode", as GitHub calls it): changing one's second factors
 * needs the password or a second factor given within `recentAuthSeconds` in this
 * session, not only a valid access token. Each session keeps when its user last proved
 * who they are (`authenticated_at`): at sign-in, and again at `POST /accounts/reauthenticate`.
 */

function needsRecentSignIn(deps: AccountsDeps): DomainError {
  const minutes = Math.max(1, Math.round(deps.config.recentAuthSeconds / 60));
  return new DomainError(
    "forbidden",
    `this needs a sign-in from the last ${minutes} minutes: confirm your password or a code with POST /accounts/reauthenticate`,
  );
}

/** 403 unless the caller signed in (or re-authenticated) recently in this session; never for an API key. */
export async function requireRecentAuthentication(deps: AccountsDeps, principal: Principal): Promise<void> {
  requireSignedInUser(principal);
  if (!principal.sessionId) throw needsRecentSignIn(deps);
  const session = await deps.db
    .selectFrom("auth_sessions")
    .select("authenticated_at")
    .where("id", "=", principal.sessionId)
    .where("user_id", "=", principal.userId)
    .executeTakeFirst();
  if (!session || Date.now() - session.authenticated_at.getTime() > deps.config.recentAuthSeconds * 1000) {
    throw needsRecentSignIn(deps);
  }
}
