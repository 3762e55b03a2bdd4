import { answeringSuccess, messageResponse, withCredential } from "../../schemas.ts";
import { router } from "../../trpc.ts";
import { findMfaChallenge } from "../mfa-challenges.ts";
import { passkeyLoginOptions, passkeyRegistrationOptions, registerPasskey, removeAllPasskeys } from "../passkeys.ts";
import { requireSignedInUser } from "../permissions.ts";
import {
  emailInput,
  mfaTokenInput,
  passkeyCreationOptions,
  passkeyRegistrationInput,
  passkeyRequestOptions,
} from "../schemas.ts";
import { noInput, op } from "./shared.ts";

/** `accounts.passkeys.*`: registering passkeys, signing in with them, removing them. */
export const passkeysRouter = router({
  registerOptions: op
    .authed({
      method: "POST",
      path: "/accounts/passkeys/register-options",
      summary: "Start passkey registration",
      description: `WebAuthn creation options for \`navigator.credentials.create\` (e.g. \`startRegistration\` of @simplewebauthn/browser); answer with \`POST /accounts/passkeys/register\` within 5 minutes. Needs a Bearer token (not an API key) from a recent sign-in (see \`POST /accounts/reauthenticate\`).`,
      errorResponses: withCredential,
    })
    .input(noInput)
    .output(passkeyCreationOptions)
    .mutation(async ({ ctx }) => {
      requireSignedInUser(ctx.principal);
      return passkeyRegistrationOptions(ctx.services.accounts, ctx.principal);
    }),
  register: op
    .authed({
      method: "POST",
      path: "/accounts/passkeys/register",
      summary: "Finish passkey registration",
      description: `Verifies the authenticator's attestation (\`response\`) against the pending registration and stores the passkey; from then on sign-in offers the \`passkey\` method. Needs a Bearer token (not an API key) from a recent sign-in.`,
      errorResponses: { ...withCredential, 409: "Passkey already registered" },
    })
    .input(passkeyRegistrationInput)
    .output(messageResponse)
    .mutation(
      answeringSuccess(({ ctx, input }) => {
        requireSignedInUser(ctx.principal);
        return registerPasskey(ctx.services.accounts, ctx.principal, input.response);
      }),
    ),
  authOptions: op
    .open({
      method: "POST",
      path: "/accounts/passkeys/auth-options",
      summary: "WebAuthn request options for a sign-in waiting for its second factor",
      description: `For \`navigator.credentials.get\` (e.g. \`startAuthentication\` of @simplewebauthn/browser); send the assertion as \`passkey\` to \`POST /accounts/auth-with-mfa\` with the same \`mfa_token\`.`,
      errorResponses: { 400: "Invalid input, or the user has no passkey", 401: "MFA token invalid or expired" },
    })
    .input(mfaTokenInput)
    .output(passkeyRequestOptions)
    .mutation(async ({ ctx, input }) => {
      const deps = ctx.services.accounts;
      return passkeyLoginOptions(deps, await findMfaChallenge(deps.db, input.mfa_token));
    }),
  deleteAll: op
    .authed({
      method: "DELETE",
      path: "/accounts/all-passkeys",
      summary: "Remove all passkeys of a user",
      description: `Removes every passkey of the user \`email\` of the caller's account. Allowed to that user, with a Bearer token from a recent sign-in (see \`POST /accounts/reauthenticate\`), and to owners and admins for anyone but the owner and users who also belong to another account (account administration: a signed-in owner or admin, or an API key whose \`allowed_paths\` name \`DELETE /accounts/all-passkeys\`).`,
      errorResponses: { ...withCredential, 404: "No such user in this account" },
    })
    .input(emailInput)
    .output(messageResponse)
    .mutation(
      answeringSuccess(({ ctx, input }) => removeAllPasskeys(ctx.services.accounts, ctx.principal, input.email)),
    ),
});
