import type { Role } from "@platform/db";
import type { Principal } from "../caller.ts";
import { DomainError } from "../errors.ts";
import { ADMINISTRATION, requireAdministration } from "./administration.ts";
import type { AccountsDeps } from "./deps.ts";
import { pendingInvitations, revokeInvitation } from "./invitations.ts";
import { findMember } from "./members.ts";
import { requireAdmin } from "./permissions.ts";
import { endMemberSessions } from "./sessions.ts";

export interface UserEntry {
  email: string;
  role: Role;
  display_name: string;
  status: "active" | "invited";
  expires?: number;
}

/** The members of the caller's account, then its pending invitations. */
export async function listUsers(deps: AccountsDeps, principal: Principal): Promise<UserEntry[]> {
  const [members, invited] = await Promise.all([
    deps.db
      .selectFrom("memberships")
      .innerJoin("users", "users.id", "memberships.user_id")
      .select(["users.email", "memberships.role", "users.display_name"])
      .where("memberships.account_id", "=", principal.accountId)
      .orderBy("memberships.created_at")
      .orderBy("users.email")
      .execute(),
    pendingInvitations(deps.db, principal.accountId),
  ]);
  return [...members.map((member) => ({ ...member, status: "active" as const })), ...invited];
}

/**
 * Removes a user from the caller's account (owners and admins only; never the root user).
 * Their sign-in sessions in this account end at once, so their access tokens stop working,
 * and the API keys they created in it are deleted. The user keeps other memberships.
 * An email with a pending invitation instead has the invitation revoked.
 */
export async function removeUser(deps: AccountsDeps, principal: Principal, email: string): Promise<void> {
  requireAdmin(principal, "remove users");
  requireAdministration(principal, ADMINISTRATION.removeUser);
  const target = await findMember(deps.db, principal.accountId, email);
  if (!target) {
    if (await revokeInvitation(deps.db, principal.accountId, email)) return;
    throw new DomainError("not_found", "no user with this email in this account");
  }
  const account = await deps.db
    .selectFrom("accounts")
    .select("root_email")
    .where("id", "=", principal.accountId)
    .executeTakeFirstOrThrow();
  if (target.role === "owner" || target.email === account.root_email) {
    throw new DomainError("forbidden", "the root user cannot be removed");
  }
  const member = { accountId: principal.accountId, userId: target.userId };
  await deps.db.transaction().execute(async (trx) => {
    await endMemberSessions(trx, member);
    await trx
      .deleteFrom("mfa_challenges")
      .where("account_id", "=", member.accountId)
      .where("user_id", "=", member.userId)
      .execute();
    await trx
      .deleteFrom("api_keys")
      .where("account_id", "=", member.accountId)
      .where("created_by", "=", member.userId)
      .execute();
    await trx
      .deleteFrom("memberships")
      .where("account_id", "=", member.accountId)
      .where("user_id", "=", member.userId)
      .execute();
  });
  await deps.authCache.revoke({ kind: "member", ...member });
}
