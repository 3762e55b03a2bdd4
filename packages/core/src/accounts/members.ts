import type { Database, Role } from "@platform/db";
import type { Kysely } from "kysely";

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
