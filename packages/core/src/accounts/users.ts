import type { Database, Role } from "@platform/db";
import type { Kysely } from "kysely";
import type { Principal } from "../context.ts";
import { DomainError } from "../errors.ts";
import { defaultDisplayName } from "./accounts.ts";
import { isUniqueViolation } from "./database-errors.ts";
import type { AccountsDeps } from "./deps.ts";
import { hashPassword } from "./passwords.ts";
import { requireAdmin } from "./permissions.ts";
import { endMemberSessions } from "./sessions.ts";

export interface AccountMember {
  userId: string;
  email: string;
  role: Role;
  displayName: string;
}

/** A user of this account by email (lower-cased), or undefined; users of other accounts are invisible. */
export async function findMember(
  db: Kysely<Database>,
  accountId: string,
  email: string,
): Promise<AccountMember | undefined> {
  const row = await db
    .selectFrom("memberships")
    .innerJoin("users", "users.id", "memberships.user_id")
    .select(["users.id", "users.email", "users.display_name", "memberships.role"])
    .where("memberships.account_id", "=", accountId)
    .where("users.email", "=", email)
    .executeTakeFirst();
  return row && { userId: row.id, email: row.email, role: row.role, displayName: row.display_name };
}

export async function listUsers(
  deps: AccountsDeps,
  principal: Principal,
): Promise<{ email: string; role: Role; display_name: string }[]> {
  return deps.db
    .selectFrom("memberships")
    .innerJoin("users", "users.id", "memberships.user_id")
    .select(["users.email", "memberships.role", "users.display_name"])
    .where("memberships.account_id", "=", principal.accountId)
    .orderBy("memberships.created_at")
    .orderBy("users.email")
    .execute();
}

export interface AddUserInput {
  email: string;
  password?: string;
  role: "admin" | "member";
  display_name?: string;
}

const alreadyMember = () => new DomainError("conflict", "this user is already a member of the account");

/**
 * Adds a user to the caller's account (owners and admins only). A new email gets a user
 * with the given password; an email that already has a user (in another account) is added
 * as it is, keeping its own password.
 */
export async function addUser(
  deps: AccountsDeps,
  principal: Principal,
  input: AddUserInput,
): Promise<{ email: string; role: "admin" | "member" }> {
  requireAdmin(principal, "add users");
  const existing = await deps.db.selectFrom("users").select("id").where("email", "=", input.email).executeTakeFirst();
  let userId = existing?.id;
  const passwordHash = userId || !input.password ? undefined : await hashPassword(input.password);
  if (!userId && !passwordHash) {
    throw new DomainError("validation_error", "invalid input: password: is required for a new user");
  }
  try {
    await deps.db.transaction().execute(async (trx) => {
      if (!userId && passwordHash) {
        userId = Bun.randomUUIDv7();
        await trx
          .insertInto("users")
          .values({
            id: userId,
            email: input.email,
            password_hash: passwordHash,
            display_name: input.display_name ?? defaultDisplayName(input.email),
          })
          .execute();
      }
      if (!userId) throw new DomainError("internal_error", "user vanished while being added");
      await trx
        .insertInto("memberships")
        .values({ account_id: principal.accountId, user_id: userId, role: input.role })
        .execute();
    });
  } catch (error) {
    // Either the membership exists, or another request created the same user meanwhile.
    if (isUniqueViolation(error)) {
      if (existing) throw alreadyMember();
      throw new DomainError("conflict", "a user with this email was created meanwhile; try again");
    }
    throw error;
  }
  return { email: input.email, role: input.role };
}

/**
 * Removes a user from the caller's account (owners and admins only; never the root user).
 * Their sign-in sessions in this account end at once, so their access tokens stop working,
 * and the API keys they created in it are deleted. The user keeps other memberships.
 */
export async function removeUser(deps: AccountsDeps, principal: Principal, email: string): Promise<void> {
  requireAdmin(principal, "remove users");
  const target = await findMember(deps.db, principal.accountId, email);
  if (!target) throw new DomainError("not_found", "no user with this email in this account");
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
