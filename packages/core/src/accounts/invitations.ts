import type { Database } from "@platform/db";
import type { Kysely } from "kysely";
import type { Principal } from "../caller.ts";
import { isUniqueViolation } from "../database-errors.ts";
import { DomainError, invalidInput, messageOf } from "../errors.ts";
import { unixSeconds } from "../time.ts";
import { accountView, defaultDisplayName } from "./accounts.ts";
import { requireSignedInAdministrator } from "./administration.ts";
import { authResultFor, badCredentials, enrolledMethods } from "./auth-results.ts";
import type { AccountsDeps } from "./deps.ts";
import { findMember } from "./members.ts";
import { createMfaChallenge } from "./mfa-challenges.ts";
import { hashOpaqueToken, newOpaqueToken } from "./opaque-tokens.ts";
import { hashPassword, MIN_PASSWORD_LENGTH, verifyPassword } from "./passwords.ts";
import { signInGuard } from "./rate-limits.ts";
import type { AuthResult, MfaRequired } from "./schemas.ts";
import { type Member, startSession } from "./sessions.ts";

/**
 * Invitations: nobody becomes a member of an account without accepting one. Owners and
 * admins invite an email; the answer is the same whether or not the email has a user,
 * and the token goes to the inviter (and by mail, when SMTP is configured). Accepting
 * with a new email creates the user with the password given; accepting as an existing
 * user needs that user's password (and second factor). So no one can pre-create a user
 * for someone else's email and keep a password that the real owner's account then trusts.
 */

const INVITATION_TOKEN_PREFIX = "inv_";

export type InvitedRole = "admin" | "member";

export interface InvitationIssued {
  email: string;
  role: InvitedRole;
  status: "invited";
  invitation: { token: string; url: string; expires: number };
}

const invalidInvitation = () =>
  new DomainError("validation_error", "this invitation is invalid, expired or already used");

/** The link an invitee opens: the token travels in the fragment, which browsers never send to a server. */
function invitationUrl(deps: AccountsDeps, token: string): string {
  return `${deps.config.appUrl}/invitations/accept#token=${token}`;
}

/**
 * Invites `email` to the caller's account with `role` (signed-in owners and admins only:
 * never an API key, see `requireSignedInAdministrator`). A pending invitation of the same
 * email is replaced: its token stops working. 409 only when the email is already a member
 * of this account, which the caller can see anyway.
 */
export async function inviteUser(
  deps: AccountsDeps,
  principal: Principal,
  input: { email: string; role: InvitedRole },
): Promise<InvitationIssued> {
  requireSignedInAdministrator(principal, "invite users");
  if (await findMember(deps.db, principal.accountId, input.email)) {
    throw new DomainError("conflict", "this user is already a member of the account");
  }
  const token = newOpaqueToken(INVITATION_TOKEN_PREFIX);
  const expiresAt = new Date(Date.now() + deps.config.invitationTtlSeconds * 1000);
  await deps.db.transaction().execute(async (trx) => {
    await trx
      .deleteFrom("invitations")
      .where("account_id", "=", principal.accountId)
      .where("email", "=", input.email)
      .execute();
    await trx
      .insertInto("invitations")
      .values({
        id: Bun.randomUUIDv7(),
        account_id: principal.accountId,
        email: input.email,
        role: input.role,
        token_hash: hashOpaqueToken(token),
        invited_by: principal.userId,
        expires_at: expiresAt,
      })
      .execute();
  });
  const url = invitationUrl(deps, token);
  await mailInvitation(deps, principal.accountId, input.email, url, expiresAt);
  return {
    email: input.email,
    role: input.role,
    status: "invited",
    invitation: { token, url, expires: unixSeconds(expiresAt) },
  };
}

async function mailInvitation(deps: AccountsDeps, accountId: string, email: string, url: string, expiresAt: Date) {
  if (!deps.mailer) return;
  const account = await accountView(deps.db, accountId);
  try {
    await deps.mailer.send({
      to: email,
      subject: `You are invited to ${account.display_name}`,
      text: [
        `You have been invited to join ${account.display_name} on ${deps.config.webauthn.rpName}.`,
        "",
        `Accept the invitation: ${url}`,
        "",
        `The link works once, until ${expiresAt.toUTCString()}. If you did not expect it, ignore this mail.`,
      ].join("\n"),
    });
  } catch (error) {
    // The inviter holds the token and can pass the link on; the invitation stands.
    deps.logger.warn({ err: messageOf(error) }, "invitation mail not sent");
  }
}

interface PendingInvitation {
  id: string;
  accountId: string;
  email: string;
  role: InvitedRole;
}

async function findInvitation(db: Kysely<Database>, token: string): Promise<PendingInvitation> {
  const row = await db
    .selectFrom("invitations")
    .select(["id", "account_id", "email", "role", "expires_at"])
    .where("token_hash", "=", hashOpaqueToken(token))
    .executeTakeFirst();
  if (!row || row.expires_at.getTime() <= Date.now()) throw invalidInvitation();
  return { id: row.id, accountId: row.account_id, email: row.email, role: row.role };
}

/**
 * Spends the invitation and makes the user a member with its role, in `trx`; only one of
 * two concurrent acceptances gets through.
 */
async function join(trx: Kysely<Database>, invitationId: string, userId: string): Promise<Member> {
  const spent = await trx
    .deleteFrom("invitations")
    .where("id", "=", invitationId)
    .where("expires_at", ">", new Date())
    .returning(["account_id", "role"])
    .executeTakeFirst();
  if (!spent) throw invalidInvitation();
  try {
    await trx
      .insertInto("memberships")
      .values({ account_id: spent.account_id, user_id: userId, role: spent.role })
      .execute();
  } catch (error) {
    if (isUniqueViolation(error)) throw new DomainError("conflict", "this user is already a member of the account");
    throw error;
  }
  return { accountId: spent.account_id, userId };
}

/** Accepts an invitation whose second factor was just given (see `loginWithSecondFactor`). */
export function joinThroughInvitation(deps: AccountsDeps, invitationId: string, userId: string): Promise<Member> {
  return deps.db.transaction().execute((trx) => join(trx, invitationId, userId));
}

/**
 * Accepts an invitation: signs the invitee into the inviting account. A new email becomes
 * a user with `password`; an existing user must give their current password, and with a
 * second factor enrolled gets an MFA token whose completion accepts the invitation.
 * Password guesses count against the sign-in limits of the invited email.
 */
export async function acceptInvitation(
  deps: AccountsDeps,
  input: { token: string; password: string; display_name?: string },
  ip: string,
): Promise<AuthResult | MfaRequired> {
  const invitation = await findInvitation(deps.db, input.token);
  const guard = signInGuard(deps, "login", { email: invitation.email, ip });
  await guard.admit();
  const user = await deps.db
    .selectFrom("users")
    .select(["id", "password_hash"])
    .where("email", "=", invitation.email)
    .executeTakeFirst();
  let member: Member;
  if (user) {
    if (!(await verifyPassword(deps.config.passwordHash, input.password, user.password_hash))) {
      await guard.failed();
      throw badCredentials();
    }
    await guard.succeeded();
    const methods = await enrolledMethods(deps, user.id);
    if (methods.length > 0) {
      const pending = { accountId: invitation.accountId, userId: user.id };
      return { mfa_required: true, mfa_token: await createMfaChallenge(deps, pending, invitation.id), methods };
    }
    member = await joinThroughInvitation(deps, invitation.id, user.id);
  } else {
    member = await createInvitedUser(deps, invitation, input);
  }
  return authResultFor(deps, member, await startSession(deps, member));
}

async function createInvitedUser(
  deps: AccountsDeps,
  invitation: PendingInvitation,
  input: { password: string; display_name?: string },
): Promise<Member> {
  if (input.password.length < MIN_PASSWORD_LENGTH) {
    throw invalidInput({ path: "password", message: `must be at least ${MIN_PASSWORD_LENGTH} characters` });
  }
  const passwordHash = await hashPassword(deps.config.passwordHash, input.password);
  const userId = Bun.randomUUIDv7();
  try {
    return await deps.db.transaction().execute(async (trx) => {
      await trx
        .insertInto("users")
        .values({
          id: userId,
          email: invitation.email,
          password_hash: passwordHash,
          display_name: input.display_name ?? defaultDisplayName(invitation.email),
        })
        .execute();
      return join(trx, invitation.id, userId);
    });
  } catch (error) {
    if (isUniqueViolation(error)) {
      throw new DomainError("conflict", "a user with this email was created meanwhile; try again");
    }
    throw error;
  }
}

/** Pending (unexpired) invitations of an account, for the list of its users. */
export async function pendingInvitations(db: Kysely<Database>, accountId: string) {
  const rows = await db
    .selectFrom("invitations")
    .select(["email", "role", "expires_at"])
    .where("account_id", "=", accountId)
    .where("expires_at", ">", new Date())
    .orderBy("created_at")
    .orderBy("email")
    .execute();
  return rows.map((row) => ({
    email: row.email,
    role: row.role,
    display_name: "",
    status: "invited" as const,
    expires: unixSeconds(row.expires_at),
  }));
}

/** Revokes the pending invitation of `email` to an account; false when there was none. */
export async function revokeInvitation(db: Kysely<Database>, accountId: string, email: string): Promise<boolean> {
  const revoked = await db
    .deleteFrom("invitations")
    .where("account_id", "=", accountId)
    .where("email", "=", email)
    .returning("id")
    .executeTakeFirst();
  return revoked !== undefined;
}
