import type { Database } from "@platform/db";
import type { Kysely } from "kysely";
import { PLATFORM_SCOPE } from "../broker/port.ts";
import { DomainError, messageOf } from "../errors.ts";
import type { AccountsDeps } from "./deps.ts";
import { hashOpaqueToken, newOpaqueToken } from "./opaque-tokens.ts";
import { hashPassword } from "./passwords.ts";
import { tooManyAttempts } from "./rate-limits.ts";

/**
 * Password reset by email. Asking always answers the same; when the email has a user and
 * SMTP is configured, a single-use link valid `passwordResetTtlSeconds` is mailed to it,
 * in the background so that the answer takes as long either way. Using the link sets the
 * password and ends every session of the user in every account (refresh tokens and access
 * tokens alike). Without SMTP, the operator prints a link with `bun run accounts:reset-link`.
 */

const RESET_TOKEN_PREFIX = "pwr_";
/** Mails one email may receive per sign-in failure window, whoever asks; more asks answer the same and send nothing. */
const RESET_MAILS_PER_EMAIL = 3;

const invalidResetToken = () =>
  new DomainError("validation_error", "this reset link is invalid, expired or already used");

/** A new reset link for the user of `email` (a newer link replaces an older one), or undefined when there is none. */
export async function createResetLink(
  deps: Pick<AccountsDeps, "db" | "config">,
  email: string,
): Promise<{ url: string; expires: Date } | undefined> {
  const user = await deps.db.selectFrom("users").select("id").where("email", "=", email).executeTakeFirst();
  if (!user) return undefined;
  const token = newOpaqueToken(RESET_TOKEN_PREFIX);
  const expires = new Date(Date.now() + deps.config.passwordResetTtlSeconds * 1000);
  await deps.db.transaction().execute(async (trx) => {
    await trx.deleteFrom("password_resets").where("user_id", "=", user.id).execute();
    await trx
      .insertInto("password_resets")
      .values({ token_hash: hashOpaqueToken(token), user_id: user.id, expires_at: expires })
      .execute();
  });
  return { url: `${deps.config.appUrl}/password/reset#token=${token}`, expires };
}

/** `POST /accounts/password/forgot`: mails a link when it can; says nothing either way. */
export async function forgotPassword(deps: AccountsDeps, email: string, ip: string): Promise<void> {
  const limits = deps.config.loginLimits;
  const byIp = await deps.broker.allow(PLATFORM_SCOPE, `reset:ip:${ip}`, limits.perIp, limits.windowSeconds);
  if (!byIp.allowed) throw tooManyAttempts(byIp.retryAfterSeconds);
  const mailer = deps.mailer;
  if (!mailer) {
    deps.logger.info("password reset asked, but no SMTP_URL is set: `bun run accounts:reset-link EMAIL` prints a link");
    return;
  }
  const byEmail = await deps.broker.allow(
    PLATFORM_SCOPE,
    `reset:email:${email}`,
    RESET_MAILS_PER_EMAIL,
    limits.windowSeconds,
  );
  if (!byEmail.allowed) return;
  void (async () => {
    const link = await createResetLink(deps, email);
    if (!link) return;
    await mailer.send({
      to: email,
      subject: "Reset your password",
      text: [
        `Someone asked to reset the password of ${email} on ${deps.config.webauthn.rpName}.`,
        "",
        `Choose a new password: ${link.url}`,
        "",
        `The link works once, until ${link.expires.toUTCString()}. If you did not ask, ignore this mail: your password stays as it is.`,
      ].join("\n"),
    });
  })().catch((error) => {
    deps.logger.warn({ err: messageOf(error) }, "password reset mail not sent");
  });
}

/** Spends a reset token: the new password is set and every session of the user ends, in one transaction. */
async function spendReset(trx: Kysely<Database>, token: string, passwordHash: string): Promise<string> {
  const reset = await trx
    .deleteFrom("password_resets")
    .where("token_hash", "=", hashOpaqueToken(token))
    .returning(["user_id", "expires_at"])
    .executeTakeFirst();
  if (!reset || reset.expires_at.getTime() <= Date.now()) throw invalidResetToken();
  const userId = reset.user_id;
  await trx.updateTable("users").set({ password_hash: passwordHash }).where("id", "=", userId).execute();
  await trx
    .updateTable("auth_sessions")
    .set({ revoked_at: new Date() })
    .where("user_id", "=", userId)
    .where("revoked_at", "is", null)
    .execute();
  await trx.deleteFrom("mfa_challenges").where("user_id", "=", userId).execute();
  await trx.deleteFrom("password_resets").where("user_id", "=", userId).execute();
  return userId;
}

/** `POST /accounts/password/reset`: sets the password; the user's access tokens stop working in every process. */
export async function resetPassword(deps: AccountsDeps, input: { token: string; password: string }): Promise<void> {
  const passwordHash = await hashPassword(deps.config.passwordHash, input.password);
  const userId = await deps.db.transaction().execute((trx) => spendReset(trx, input.token, passwordHash));
  await deps.authCache.revoke({ kind: "user", userId });
}
