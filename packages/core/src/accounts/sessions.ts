import type { Database } from "@platform/db";
import type { Kysely } from "kysely";
import { DomainError } from "../errors.ts";
import { unixSeconds } from "../time.ts";
import type { AccountsDeps } from "./deps.ts";
import { hashOpaqueToken, newOpaqueToken } from "./opaque-tokens.ts";

/**
 * Sign-in sessions. Each sign-in starts a session (a refresh-token family) holding one
 * live refresh token at a time. Refreshing spends the token and hands out its successor;
 * presenting a spent token again means it leaked, so the whole family is revoked, and with
 * it every access token of the session (they carry its id, checked on each request).
 * Within `refreshReuseGraceSeconds` of the exchange, a second presentation (two tabs or
 * requests refreshing at once) gets a successor of its own in the same session instead.
 */

const REFRESH_TOKEN_PREFIX = "rt_";

export interface SessionTokens {
  auth_token: string;
  refresh_token: string;
}

export interface Member {
  accountId: string;
  userId: string;
}

const invalidRefreshToken = () => new DomainError("unauthorized", "invalid refresh token");

async function issueRefreshToken(deps: AccountsDeps, db: Kysely<Database>, sessionId: string, member: Member) {
  const token = newOpaqueToken(REFRESH_TOKEN_PREFIX);
  await db
    .insertInto("refresh_tokens")
    .values({
      token_hash: hashOpaqueToken(token),
      session_id: sessionId,
      account_id: member.accountId,
      user_id: member.userId,
      expires_at: new Date(Date.now() + deps.config.refreshTokenTtlSeconds * 1000),
    })
    .execute();
  return token;
}

/** Starts a session for a member who has just proven who they are. */
export async function startSession(deps: AccountsDeps, member: Member): Promise<SessionTokens> {
  const sessionId = Bun.randomUUIDv7();
  const authenticatedAt = new Date();
  const refreshToken = await deps.db.transaction().execute(async (trx) => {
    // Housekeeping on the way: tokens of this user that can no longer be used.
    await trx
      .deleteFrom("refresh_tokens")
      .where("user_id", "=", member.userId)
      .where("expires_at", "<", new Date())
      .execute();
    await trx
      .insertInto("auth_sessions")
      .values({
        id: sessionId,
        account_id: member.accountId,
        user_id: member.userId,
        authenticated_at: authenticatedAt,
      })
      .execute();
    return issueRefreshToken(deps, trx, sessionId, member);
  });
  const authToken = await deps.accessTokens.issue({ ...member, sessionId, authTime: unixSeconds(authenticatedAt) });
  return { auth_token: authToken, refresh_token: refreshToken };
}

/** Ends a session: its refresh token stops working, and its access tokens in every process at once. */
async function revokeSession(deps: AccountsDeps, sessionId: string): Promise<void> {
  await deps.db
    .updateTable("auth_sessions")
    .set({ revoked_at: new Date() })
    .where("id", "=", sessionId)
    .where("revoked_at", "is", null)
    .execute();
  await deps.authCache.revoke({ kind: "session", sessionId });
}

/** Spends a refresh token and returns its successor with a new access token, for the same member. */
export async function rotateRefreshToken(
  deps: AccountsDeps,
  refreshToken: string,
): Promise<{ member: Member; tokens: SessionTokens }> {
  const tokenHash = hashOpaqueToken(refreshToken);
  const found = await deps.db
    .selectFrom("refresh_tokens")
    .innerJoin("auth_sessions", "auth_sessions.id", "refresh_tokens.session_id")
    .select([
      "refresh_tokens.session_id",
      "refresh_tokens.account_id",
      "refresh_tokens.user_id",
      "refresh_tokens.expires_at",
      "refresh_tokens.rotated_at",
      "auth_sessions.revoked_at",
      "auth_sessions.authenticated_at",
    ])
    .where("refresh_tokens.token_hash", "=", tokenHash)
    .executeTakeFirst();
  if (!found || found.revoked_at) throw invalidRefreshToken();
  const reused = () => new DomainError("unauthorized", "refresh token was already used; sign in again");
  const graceMs = deps.config.refreshReuseGraceSeconds * 1000;
  const withinGrace = (rotatedAt: Date) => Date.now() - rotatedAt.getTime() <= graceMs;
  if (found.rotated_at && !withinGrace(found.rotated_at)) {
    await revokeSession(deps, found.session_id);
    throw reused();
  }
  if (found.expires_at.getTime() <= Date.now()) throw new DomainError("unauthorized", "refresh token expired");

  if (!found.rotated_at) {
    // Only one of two concurrent refreshes with the same token spends it; the other is
    // a second presentation within the grace (it was spent a moment ago), unless there is none.
    const spent = await deps.db
      .updateTable("refresh_tokens")
      .set({ rotated_at: new Date() })
      .where("token_hash", "=", tokenHash)
      .where("rotated_at", "is", null)
      .returning("token_hash")
      .executeTakeFirst();
    if (!spent && graceMs <= 0) {
      await revokeSession(deps, found.session_id);
      throw reused();
    }
  }

  const member = { accountId: found.account_id, userId: found.user_id };
  const stillMember = await deps.db
    .selectFrom("memberships")
    .select("role")
    .where("account_id", "=", member.accountId)
    .where("user_id", "=", member.userId)
    .executeTakeFirst();
  if (!stillMember) {
    await revokeSession(deps, found.session_id);
    throw invalidRefreshToken();
  }

  const successor = await issueRefreshToken(deps, deps.db, found.session_id, member);
  const authToken = await deps.accessTokens.issue({
    ...member,
    sessionId: found.session_id,
    authTime: unixSeconds(found.authenticated_at),
  });
  return { member, tokens: { auth_token: authToken, refresh_token: successor } };
}

/**
 * Ends the session a refresh token belongs to, if it is the caller's own: its refresh
 * token and its access tokens stop working. Anything else is left alone, silently.
 */
export async function endSession(deps: AccountsDeps, member: Member, refreshToken: string): Promise<void> {
  const found = await deps.db
    .selectFrom("refresh_tokens")
    .select("session_id")
    .where("token_hash", "=", hashOpaqueToken(refreshToken))
    .where("account_id", "=", member.accountId)
    .where("user_id", "=", member.userId)
    .executeTakeFirst();
  if (found) await revokeSession(deps, found.session_id);
}

/**
 * Deletes every session of a member of an account (used when the member is removed, inside
 * its transaction); once that commits, the caller announces `{kind: "member"}` to the auth cache.
 */
export async function endMemberSessions(db: Kysely<Database>, member: Member): Promise<void> {
  await db
    .deleteFrom("auth_sessions")
    .where("account_id", "=", member.accountId)
    .where("user_id", "=", member.userId)
    .execute();
}
