import type { Database } from "@platform/db";
import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
} from "@simplewebauthn/server";
import type { Kysely } from "kysely";
import type { z } from "zod";
import type { Principal } from "../caller.ts";
import { isUniqueViolation } from "../database-errors.ts";
import { DomainError } from "../errors.ts";
import { ADMINISTRATION, requireAdministration } from "./administration.ts";
import type { AccountsDeps } from "./deps.ts";
import { findMember } from "./members.ts";
import { type PendingMfa, setWebAuthnChallenge } from "./mfa-challenges.ts";
import { isAdmin } from "./permissions.ts";
import { requireRecentAuthentication } from "./recent-auth.ts";
import type { passkeyAssertion, passkeyAttestation } from "./schemas.ts";

/** How long a browser has to answer a registration or authentication ceremony. */
const CEREMONY_TIMEOUT_MS = 5 * 60 * 1000;
/** WebAuthn (§7.1, registration step 25): longer credential ids must be refused. */
const MAX_CREDENTIAL_ID_BYTES = 1023;

/**
 * The WebAuthn library, loaded at the first ceremony: with its X.509 and ASN.1 parsers it
 * took 160 ms of every start, for an operation most processes never run.
 */
const webAuthn = () => import("@simplewebauthn/server");

export async function hasPasskeys(db: Kysely<Database>, userId: string): Promise<boolean> {
  const row = await db.selectFrom("passkeys").select("id").where("user_id", "=", userId).executeTakeFirst();
  return row !== undefined;
}

function userPasskeys(db: Kysely<Database>, userId: string) {
  return db
    .selectFrom("passkeys")
    .select(["id", "public_key", "counter", "transports"])
    .where("user_id", "=", userId)
    .orderBy("created_at")
    .execute();
}

/** Options for `navigator.credentials.create`; their challenge is kept for `registerPasskey`. */
export async function passkeyRegistrationOptions(
  deps: AccountsDeps,
  principal: Principal,
): Promise<PublicKeyCredentialCreationOptionsJSON> {
  await requireRecentAuthentication(deps, principal);
  const user = await deps.db
    .selectFrom("users")
    .select(["email", "display_name"])
    .where("id", "=", principal.userId)
    .executeTakeFirstOrThrow();
  const existing = await userPasskeys(deps.db, principal.userId);
  const options = await (await webAuthn()).generateRegistrationOptions({
    rpName: deps.config.webauthn.rpName,
    rpID: deps.config.webauthn.rpId,
    userName: user.email,
    userID: new TextEncoder().encode(principal.userId),
    userDisplayName: user.display_name,
    attestationType: "none",
    timeout: CEREMONY_TIMEOUT_MS,
    excludeCredentials: existing.map((passkey) => ({ id: passkey.id, transports: passkey.transports })),
    authenticatorSelection: { residentKey: "preferred", userVerification: "preferred" },
  });
  const pending = {
    challenge: options.challenge,
    expires_at: new Date(Date.now() + CEREMONY_TIMEOUT_MS),
  };
  await deps.db
    .insertInto("passkey_registrations")
    .values({ user_id: principal.userId, ...pending })
    .onConflict((conflict) => conflict.column("user_id").doUpdateSet(pending))
    .execute();
  return options;
}

/** Verifies the authenticator's attestation against the pending challenge and stores the passkey. */
export async function registerPasskey(
  deps: AccountsDeps,
  principal: Principal,
  response: z.infer<typeof passkeyAttestation>,
): Promise<void> {
  await requireRecentAuthentication(deps, principal);
  const pending = await deps.db
    .deleteFrom("passkey_registrations")
    .where("user_id", "=", principal.userId)
    .returning(["challenge", "expires_at"])
    .executeTakeFirst();
  if (!pending || pending.expires_at.getTime() <= Date.now()) {
    throw new DomainError(
      "validation_error",
      "no passkey registration in progress; call POST /accounts/passkeys/register-options first",
    );
  }
  const verification = await (await webAuthn())
    .verifyRegistrationResponse({
      response: response as RegistrationResponseJSON,
      expectedChallenge: pending.challenge,
      expectedOrigin: deps.config.webauthn.origins,
      expectedRPID: deps.config.webauthn.rpId,
      requireUserVerification: false,
    })
    .catch((error: Error) => {
      throw new DomainError("validation_error", `passkey registration failed: ${error.message}`);
    });
  if (!verification.verified) throw new DomainError("validation_error", "passkey registration failed");
  const { credential, credentialDeviceType, credentialBackedUp } = verification.registrationInfo;
  if (Buffer.from(credential.id, "base64url").byteLength > MAX_CREDENTIAL_ID_BYTES) {
    throw new DomainError(
      "validation_error",
      `passkey registration failed: the credential id is longer than ${MAX_CREDENTIAL_ID_BYTES} bytes`,
    );
  }
  try {
    await deps.db
      .insertInto("passkeys")
      .values({
        id: credential.id,
        user_id: principal.userId,
        public_key: Buffer.from(credential.publicKey).toString("base64url"),
        counter: credential.counter,
        transports: JSON.stringify(credential.transports ?? response.response.transports ?? []),
        device_type: credentialDeviceType,
        backed_up: credentialBackedUp,
      })
      .execute();
  } catch (error) {
    if (isUniqueViolation(error)) throw new DomainError("conflict", "this passkey is already registered");
    throw error;
  }
}

/** Options for `navigator.credentials.get` during an MFA login; the challenge joins the pending login. */
export async function passkeyLoginOptions(
  deps: AccountsDeps,
  pending: PendingMfa,
): Promise<PublicKeyCredentialRequestOptionsJSON> {
  const passkeys = await userPasskeys(deps.db, pending.userId);
  if (passkeys.length === 0) throw new DomainError("validation_error", "this user has no passkey");
  const options = await (await webAuthn()).generateAuthenticationOptions({
    rpID: deps.config.webauthn.rpId,
    allowCredentials: passkeys.map((passkey) => ({ id: passkey.id, transports: passkey.transports })),
    userVerification: "preferred",
    timeout: CEREMONY_TIMEOUT_MS,
  });
  await setWebAuthnChallenge(deps.db, pending, options.challenge);
  return options;
}

/** Whether the assertion was made by one of the user's passkeys over the pending challenge. */
export async function checkPasskeyAssertion(
  deps: AccountsDeps,
  pending: PendingMfa,
  assertion: z.infer<typeof passkeyAssertion>,
): Promise<boolean> {
  if (!pending.webauthnChallenge) {
    throw new DomainError("validation_error", "call POST /accounts/passkeys/auth-options first");
  }
  const passkey = await deps.db
    .selectFrom("passkeys")
    .select(["id", "public_key", "counter", "transports"])
    .where("id", "=", assertion.id)
    .where("user_id", "=", pending.userId)
    .executeTakeFirst();
  if (!passkey) return false;
  const verification = await (await webAuthn())
    .verifyAuthenticationResponse({
      response: assertion as AuthenticationResponseJSON,
      expectedChallenge: pending.webauthnChallenge,
      expectedOrigin: deps.config.webauthn.origins,
      expectedRPID: deps.config.webauthn.rpId,
      credential: {
        id: passkey.id,
        publicKey: new Uint8Array(Buffer.from(passkey.public_key, "base64url")),
        counter: Number(passkey.counter),
        transports: passkey.transports,
      },
      requireUserVerification: false,
    })
    .catch(() => null);
  if (!verification?.verified) return false;
  await deps.db
    .updateTable("passkeys")
    .set({ counter: verification.authenticationInfo.newCounter, last_used_at: new Date() })
    .where("id", "=", passkey.id)
    .execute();
  return true;
}

/**
 * Removes every passkey of a user of the caller's account. Allowed to the user
 * themself, and to owners and admins for other users except the owner and except
 * users who also belong to another account.
 */
export async function removeAllPasskeys(deps: AccountsDeps, principal: Principal, email: string): Promise<void> {
  const target = await findMember(deps.db, principal.accountId, email);
  if (!target) throw new DomainError("not_found", "no user with this email in this account");
  // One's own passkeys go only after a recent sign-in; an admin's removal of another's is an admin action.
  if (target.userId === principal.userId) await requireRecentAuthentication(deps, principal);
  else {
    if (!isAdmin(principal))
      throw new DomainError("forbidden", "only owners and admins can remove another user's passkeys");
    requireAdministration(principal, ADMINISTRATION.removeOthersPasskeys);
    if (target.role === "owner") throw new DomainError("forbidden", "only the owner can remove the owner's passkeys");
    // Passkeys belong to the user, not the account: one account's admin must not weaken
    // the sign-in of someone who also belongs to another account.
    const elsewhere = await deps.db
      .selectFrom("memberships")
      .select("account_id")
      .where("user_id", "=", target.userId)
      .where("account_id", "!=", principal.accountId)
      .executeTakeFirst();
    if (elsewhere) {
      throw new DomainError(
        "forbidden",
        "this user also belongs to another account; only they can remove their passkeys",
      );
    }
  }
  await deps.db.transaction().execute(async (trx) => {
    await trx.deleteFrom("passkeys").where("user_id", "=", target.userId).execute();
    await trx.deleteFrom("passkey_registrations").where("user_id", "=", target.userId).execute();
  });
}
