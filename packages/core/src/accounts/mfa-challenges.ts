import type { Database } from "@platform/db";
import type { Kysely } from "kysely";
import { DomainError } from "../errors.ts";
import type { AccountsDeps } from "./deps.ts";
import { hashOpaqueToken, newOpaqueToken } from "./opaque-tokens.ts";
import type { Member } from "./sessions.ts";

/**
 * A password login that still needs its second factor. The client holds the MFA token;
 * the server keeps its hash, the member it will sign in, and the WebAuthn challenge once
 * passkey options were asked for. It is spent by the successful second factor.
 */
export interface PendingMfa extends Member {
  tokenHash: string;
  email: string;
  webauthnChallenge: string | null;
  /** The invitation this sign-in accepts once its second factor is given. */
  invitationId: string | null;
}

const MFA_TOKEN_PREFIX = "mfa_";

const invalidMfaToken = () => new DomainError("unauthorized", "invalid or expired mfa_token");

export async function createMfaChallenge(deps: AccountsDeps, member: Member, invitationId?: string): Promise<string> {
  const token = newOpaqueToken(MFA_TOKEN_PREFIX);
  await deps.db.transaction().execute(async (trx) => {
    await trx
      .deleteFrom("mfa_challenges")
      .where("user_id", "=", member.userId)
      .where("expires_at", "<", new Date())
      .execute();
    await trx
      .insertInto("mfa_challenges")
      .values({
        token_hash: hashOpaqueToken(token),
        account_id: member.accountId,
        user_id: member.userId,
        invitation_id: invitationId ?? null,
        expires_at: new Date(Date.now() + deps.config.mfaTokenTtlSeconds * 1000),
      })
      .execute();
  });
  return token;
}

/** The pending login an MFA token stands for; 401 when it is unknown, spent or expired. */
export async function findMfaChallenge(db: Kysely<Database>, mfaToken: string): Promise<PendingMfa> {
  const row = await db
    .selectFrom("mfa_challenges")
    .innerJoin("users", "users.id", "mfa_challenges.user_id")
    .select([
      "mfa_challenges.token_hash",
      "mfa_challenges.account_id",
      "mfa_challenges.user_id",
      "mfa_challenges.webauthn_challenge",
      "mfa_challenges.invitation_id",
      "mfa_challenges.expires_at",
      "users.email",
    ])
    .where("mfa_challenges.token_hash", "=", hashOpaqueToken(mfaToken))
    .executeTakeFirst();
  if (!row || row.expires_at.getTime() <= Date.now()) throw invalidMfaToken();
  return {
    tokenHash: row.token_hash,
    accountId: row.account_id,
    userId: row.user_id,
    email: row.email,
    webauthnChallenge: row.webauthn_challenge,
    invitationId: row.invitation_id,
  };
}

export async function setWebAuthnChallenge(db: Kysely<Database>, pending: PendingMfa, challenge: string) {
  await db
    .updateTable("mfa_challenges")
    .set({ webauthn_challenge: challenge })
    .where("token_hash", "=", pending.tokenHash)
    .execute();
}

/** Spends the MFA token; only one of two concurrent completions gets through. */
export async function consumeMfaChallenge(db: Kysely<Database>, pending: PendingMfa): Promise<void> {
  const spent = await db
    .deleteFrom("mfa_challenges")
    .where("token_hash", "=", pending.tokenHash)
    .returning("token_hash")
    .executeTakeFirst();
  if (!spent) throw invalidMfaToken();
}
