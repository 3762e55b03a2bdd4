import type { Database } from "@platform/db";
import type { Kysely } from "kysely";
import { isUniqueViolation } from "../database-errors.ts";
import { DomainError, isDomainError } from "../errors.ts";
import type { AccountsDeps } from "./deps.ts";
import { hashPassword } from "./passwords.ts";
import { admitSignup, signInGuard } from "./rate-limits.ts";
import type { AccountView } from "./schemas.ts";
import { type Member, type SessionTokens, startSession } from "./sessions.ts";

export interface SignupInput {
  email: string;
  password: string;
  account_name: string;
  display_name?: string;
}

const emailTaken = () => new DomainError("conflict", "an account with this email already exists");

/** The name a user is shown under when they gave none: the part of the email before `@`. */
export function defaultDisplayName(email: string): string {
  return email.split("@")[0] || email;
}

export async function accountView(db: Kysely<Database>, accountId: string): Promise<AccountView> {
  const row = await db
    .selectFrom("accounts")
    .select(["id", "name", "display_name", "root_email", "plan"])
    .where("id", "=", accountId)
    .executeTakeFirst();
  if (!row) throw new DomainError("unauthorized", "invalid credential");
  return {
    name: row.name,
    id: row.id,
    display_name: row.display_name,
    root_email: row.root_email,
    subscription_status: row.plan,
  };
}

/**
 * Creates an account with its root user (the owner) and signs that user in. The email
 * must not belong to any user yet (409). Since that answer tells whether an email has a
 * user, it counts as a failed sign-in of that email from that address (the sign-in limits
 * then refuse the pair and the address with 429, as they refuse password guessing), and
 * every sign-up counts against the address besides.
 */
export async function signUp(
  deps: AccountsDeps,
  input: SignupInput,
  ip: string,
): Promise<{ member: Member; tokens: SessionTokens }> {
  const guard = signInGuard(deps, "login", { email: input.email, ip });
  await guard.admit();
  await admitSignup(deps.broker, deps.config.loginLimits, ip);
  const passwordHash = await hashPassword(deps.config.passwordHash, input.password);
  const member = { accountId: Bun.randomUUIDv7(), userId: Bun.randomUUIDv7() };
  try {
    await deps.db.transaction().execute(async (trx) => {
      const existing = await trx.selectFrom("users").select("id").where("email", "=", input.email).executeTakeFirst();
      if (existing) throw emailTaken();
      await trx
        .insertInto("accounts")
        .values({
          id: member.accountId,
          name: input.account_name,
          display_name: input.display_name ?? input.account_name,
          root_email: input.email,
        })
        .execute();
      await trx
        .insertInto("users")
        .values({
          id: member.userId,
          email: input.email,
          password_hash: passwordHash,
          display_name: input.display_name ?? defaultDisplayName(input.email),
        })
        .execute();
      await trx
        .insertInto("memberships")
        .values({ account_id: member.accountId, user_id: member.userId, role: "owner" })
        .execute();
    });
  } catch (error) {
    const taken = isUniqueViolation(error) || (isDomainError(error) && error.code === "conflict");
    if (!taken) throw error;
    await guard.failed();
    throw emailTaken();
  }
  return { member, tokens: await startSession(deps, member) };
}
