import { z } from "zod";
import { messageResponse, success, withCredential } from "../schemas.ts";
import { authedProcedure, publicProcedure, router } from "../trpc.ts";
import { signUp } from "./accounts.ts";
import { createApiKey, deleteApiKey, listApiKeys } from "./api-keys.ts";
import { authResultFor, loginWithPassword, loginWithSecondFactor } from "./login.ts";
import { findMfaChallenge } from "./mfa-challenges.ts";
import { passkeyLoginOptions, passkeyRegistrationOptions, registerPasskey, removeAllPasskeys } from "./passkeys.ts";
import { requireSignedInUser } from "./permissions.ts";
import {
  addedUser,
  addUserInput,
  apiKeyEntry,
  apiKeyIdInput,
  authResult,
  createApiKeyInput,
  createdApiKey,
  emailInput,
  mfaLoginInput,
  mfaRequired,
  mfaTokenInput,
  passkeyCreationOptions,
  passkeyRegistrationInput,
  passkeyRequestOptions,
  passwordLoginInput,
  price,
  refreshTokenInput,
  signupInput,
  totpCodeInput,
  totpSetup,
  userEntry,
} from "./schemas.ts";
import { endSession, rotateRefreshToken } from "./sessions.ts";
import { beginTotpSetup, confirmTotpSetup } from "./totp.ts";
import { addUser, listUsers, removeUser } from "./users.ts";

const tags = ["accounts"];
const authData = z.object({ data: authResult });
const noInput = z.object({});

const signIn = { 400: "Invalid input", 401: "Not signed in", 429: "Too many attempts (see Retry-After)" };

export const accountsRouter = router({
  signup: publicProcedure
    .meta({
      openapi: {
        method: "POST",
        path: "/accounts/signup",
        tags,
        summary: "Create an account and its owner, and sign in",
        description: `Creates an account named \`account_name\` whose root user (the owner) is \`email\`, then signs that user in. \`display_name\` names both the user and the account (default: the email's local part for the user, \`account_name\` for the account). Passwords have at least 10 characters. Signups count against the per-IP and per-email attempt limits.`,
        protect: false,
        errorResponses: { 400: "Invalid input", 409: "The email already has a user", 429: "Too many attempts" },
      },
    })
    .input(signupInput)
    .output(authData)
    .mutation(async ({ ctx, input }) => {
      const deps = ctx.services.accounts;
      const { member, tokens } = await signUp(deps, input, ctx.request.ip);
      return { data: await authResultFor(deps, member, tokens) };
    }),

  authWithPassword: publicProcedure
    .meta({
      openapi: {
        method: "POST",
        path: "/accounts/auth-with-password",
        tags,
        summary: "Sign in with email and password",
        description: `Answers the Authentication result, or, when the user has enrolled a second factor, \`{mfa_required: true, mfa_token, methods}\`: complete it with \`POST /accounts/auth-with-mfa\`. An unknown email and a wrong password both answer 401 \`invalid email or password\`. A user who belongs to several accounts is signed into the account they own, else the one they joined first. Attempts are limited per email and per client IP (429 with Retry-After).`,
        protect: false,
        errorResponses: signIn,
      },
    })
    .input(passwordLoginInput)
    .output(z.object({ data: z.union([authResult, mfaRequired]) }))
    .mutation(async ({ ctx, input }) => ({
      data: await loginWithPassword(ctx.services.accounts, input, ctx.request.ip),
    })),

  authWithMfa: publicProcedure
    .meta({
      openapi: {
        method: "POST",
        path: "/accounts/auth-with-mfa",
        tags,
        summary: "Complete a sign-in with a second factor",
        description: `Takes the \`mfa_token\` of a password sign-in and either \`totp_code\` (6 digits; each code is accepted once) or \`passkey\` (a WebAuthn assertion over the challenge of \`POST /accounts/passkeys/auth-options\`). The MFA token is spent on success. Attempts are limited per email and per client IP.`,
        protect: false,
        errorResponses: signIn,
      },
    })
    .input(mfaLoginInput)
    .output(authData)
    .mutation(async ({ ctx, input }) => ({
      data: await loginWithSecondFactor(ctx.services.accounts, input, ctx.request.ip),
    })),

  refresh: publicProcedure
    .meta({
      openapi: {
        method: "POST",
        path: "/accounts/refresh",
        tags,
        summary: "Exchange a refresh token for new tokens",
        description: `Rotation: the refresh token given stops working and a new one is returned with a new access token. Presenting a refresh token that was already exchanged ends its whole sign-in session: the newer refresh token and the session's access tokens stop working too.`,
        protect: false,
        errorResponses: { 400: "Invalid input", 401: "Refresh token invalid, expired or reused" },
      },
    })
    .input(refreshTokenInput)
    .output(authData)
    .mutation(async ({ ctx, input }) => {
      const deps = ctx.services.accounts;
      const { member, tokens } = await rotateRefreshToken(deps, input.refresh_token);
      return { data: await authResultFor(deps, member, tokens) };
    }),

  logout: authedProcedure
    .meta({
      openapi: {
        method: "POST",
        path: "/accounts/logout",
        tags,
        summary: "End a sign-in session",
        description: `Ends the session of \`refresh_token\` when it is the caller's own: the refresh token and the session's access tokens stop working. Any other token is ignored; the answer is the same.`,
        protect: true,
        errorResponses: withCredential,
      },
    })
    .input(refreshTokenInput)
    .output(messageResponse)
    .mutation(async ({ ctx, input }) => {
      await endSession(ctx.services.accounts, ctx.principal, input.refresh_token);
      return success;
    }),

  totp: router({
    setup: authedProcedure
      .meta({
        openapi: {
          method: "POST",
          path: "/accounts/totp/setup",
          tags,
          summary: "Start TOTP enrolment",
          description: `Returns a new secret and its \`otpauth://\` URL (for a QR code). TOTP is not required at sign-in until a code is confirmed with \`POST /accounts/totp/verify\`. Needs a Bearer token (not an API key); 409 when TOTP is already enabled.`,
          protect: true,
          errorResponses: { ...withCredential, 409: "TOTP already enabled" },
        },
      })
      .input(noInput)
      .output(z.object({ data: totpSetup }))
      .mutation(async ({ ctx }) => {
        requireSignedInUser(ctx.principal);
        return { data: await beginTotpSetup(ctx.services.accounts, ctx.principal) };
      }),
    verify: authedProcedure
      .meta({
        openapi: {
          method: "POST",
          path: "/accounts/totp/verify",
          tags,
          summary: "Confirm TOTP enrolment with a code",
          description: `Enables TOTP when \`code\` matches the secret of \`POST /accounts/totp/setup\`; from then on sign-in asks for a code. Needs a Bearer token (not an API key). Attempts are limited like sign-ins.`,
          protect: true,
          errorResponses: { ...withCredential, 409: "TOTP already enabled", 429: "Too many attempts" },
        },
      })
      .input(totpCodeInput)
      .output(messageResponse)
      .mutation(async ({ ctx, input }) => {
        requireSignedInUser(ctx.principal);
        await confirmTotpSetup(ctx.services.accounts, ctx.principal, input.code, ctx.request.ip);
        return success;
      }),
  }),

  passkeys: router({
    registerOptions: authedProcedure
      .meta({
        openapi: {
          method: "POST",
          path: "/accounts/passkeys/register-options",
          tags,
          summary: "Start passkey registration",
          description: `WebAuthn creation options for \`navigator.credentials.create\` (e.g. \`startRegistration\` of @simplewebauthn/browser); answer with \`POST /accounts/passkeys/register\` within 5 minutes. Needs a Bearer token (not an API key).`,
          protect: true,
          errorResponses: withCredential,
        },
      })
      .input(noInput)
      .output(passkeyCreationOptions)
      .mutation(async ({ ctx }) => {
        requireSignedInUser(ctx.principal);
        return passkeyRegistrationOptions(ctx.services.accounts, ctx.principal);
      }),
    register: authedProcedure
      .meta({
        openapi: {
          method: "POST",
          path: "/accounts/passkeys/register",
          tags,
          summary: "Finish passkey registration",
          description: `Verifies the authenticator's attestation (\`response\`) against the pending registration and stores the passkey; from then on sign-in offers the \`passkey\` method. Needs a Bearer token (not an API key).`,
          protect: true,
          errorResponses: { ...withCredential, 409: "Passkey already registered" },
        },
      })
      .input(passkeyRegistrationInput)
      .output(messageResponse)
      .mutation(async ({ ctx, input }) => {
        requireSignedInUser(ctx.principal);
        await registerPasskey(ctx.services.accounts, ctx.principal, input.response);
        return success;
      }),
    authOptions: publicProcedure
      .meta({
        openapi: {
          method: "POST",
          path: "/accounts/passkeys/auth-options",
          tags,
          summary: "WebAuthn request options for a sign-in waiting for its second factor",
          description: `For \`navigator.credentials.get\` (e.g. \`startAuthentication\` of @simplewebauthn/browser); send the assertion as \`passkey\` to \`POST /accounts/auth-with-mfa\` with the same \`mfa_token\`.`,
          protect: false,
          errorResponses: { 400: "Invalid input, or the user has no passkey", 401: "MFA token invalid or expired" },
        },
      })
      .input(mfaTokenInput)
      .output(passkeyRequestOptions)
      .mutation(async ({ ctx, input }) => {
        const deps = ctx.services.accounts;
        return passkeyLoginOptions(deps, await findMfaChallenge(deps.db, input.mfa_token));
      }),
    deleteAll: authedProcedure
      .meta({
        openapi: {
          method: "DELETE",
          path: "/accounts/all-passkeys",
          tags,
          summary: "Remove all passkeys of a user",
          description: `Removes every passkey of the user \`email\` of the caller's account. Allowed to that user, and to owners and admins for anyone but the owner and users who also belong to another account.`,
          protect: true,
          errorResponses: { ...withCredential, 404: "No such user in this account" },
        },
      })
      .input(emailInput)
      .output(messageResponse)
      .mutation(async ({ ctx, input }) => {
        await removeAllPasskeys(ctx.services.accounts, ctx.principal, input.email);
        return success;
      }),
  }),

  users: router({
    create: authedProcedure
      .meta({
        openapi: {
          method: "POST",
          path: "/accounts/users",
          tags,
          summary: "Add a user to the account",
          description: `Owners and admins only. A new email gets a user with \`password\` (required then, at least 10 characters); an email that already has a user elsewhere is added as it is, keeping its own password.`,
          protect: true,
          errorResponses: { ...withCredential, 409: "Already a member" },
        },
      })
      .input(addUserInput)
      .output(z.object({ data: addedUser }))
      .mutation(async ({ ctx, input }) => ({ data: await addUser(ctx.services.accounts, ctx.principal, input) })),
    list: authedProcedure
      .meta({
        openapi: {
          method: "GET",
          path: "/accounts/users",
          tags,
          summary: "List the users of the account",
          protect: true,
          errorResponses: withCredential,
        },
      })
      .input(z.void())
      .output(z.object({ data: z.array(userEntry) }))
      .query(async ({ ctx }) => ({ data: await listUsers(ctx.services.accounts, ctx.principal) })),
    remove: authedProcedure
      .meta({
        openapi: {
          method: "DELETE",
          path: "/accounts/remove-user",
          tags,
          summary: "Remove a user from the account",
          description: `Owners and admins only; the root user cannot be removed. The user's sign-in sessions in this account end at once (their access tokens stop working) and the API keys they created here are deleted. The email may be sent as a query parameter or in a JSON body.`,
          protect: true,
          errorResponses: { ...withCredential, 404: "No such user in this account" },
        },
      })
      .input(emailInput)
      .output(messageResponse)
      .mutation(async ({ ctx, input }) => {
        await removeUser(ctx.services.accounts, ctx.principal, input.email);
        return success;
      }),
  }),

  apiKeys: router({
    create: authedProcedure
      .meta({
        openapi: {
          method: "POST",
          path: "/accounts/api-keys",
          tags,
          summary: "Create an API key",
          description: `The key acts as its creator, with the creator's role, and stops working if the creator leaves the account. \`key\` is shown only in this answer; send it as \`X-Api-Key\`. \`allowed_paths\` restricts it to matching paths (a literal path, or a prefix ending in \`*\`); paths under \`/hub/agent\` need a pattern that names them. A trailing slash is ignored and an encoded slash (\`%2F\`) stays part of its segment. Over tRPC the procedure's path is matched, and a parameter in it (\`{id}\`) only by a prefix pattern that ends before it. A restricted key cannot create keys.`,
          protect: true,
          errorResponses: withCredential,
        },
      })
      .input(createApiKeyInput)
      .output(z.object({ data: createdApiKey }))
      .mutation(async ({ ctx, input }) => ({ data: await createApiKey(ctx.services.accounts, ctx.principal, input) })),
    list: authedProcedure
      .meta({
        openapi: {
          method: "GET",
          path: "/accounts/api-keys",
          tags,
          summary: "List API keys",
          description: "Owners and admins see every key of the account; members see the keys they created.",
          protect: true,
          errorResponses: withCredential,
        },
      })
      .input(z.void())
      .output(z.object({ data: z.array(apiKeyEntry) }))
      .query(async ({ ctx }) => ({ data: await listApiKeys(ctx.services.accounts, ctx.principal) })),
    delete: authedProcedure
      .meta({
        openapi: {
          method: "DELETE",
          path: "/accounts/api-keys/{id}",
          tags,
          summary: "Delete an API key",
          description: "Owners and admins may delete any key of the account; members the keys they created.",
          protect: true,
          errorResponses: { ...withCredential, 404: "No such key" },
        },
      })
      .input(apiKeyIdInput)
      .output(messageResponse)
      .mutation(async ({ ctx, input }) => {
        await deleteApiKey(ctx.services.accounts, ctx.principal, input.id);
        return success;
      }),
  }),

  prices: router({
    list: authedProcedure
      .meta({
        openapi: {
          method: "GET",
          path: "/accounts/payment/prices",
          tags,
          summary: "List payment prices",
          description: "The configured price catalog (PRICES_FILE), or the built-in one. Amounts are in cents.",
          protect: true,
          errorResponses: withCredential,
        },
      })
      .input(z.void())
      .output(z.object({ data: z.array(price) }))
      .query(({ ctx }) => ({ data: ctx.services.accounts.prices })),
  }),
});
