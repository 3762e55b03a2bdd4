import { z } from "zod";
import { answeringSuccess, messageResponse, withCredential } from "../../schemas.ts";
import { signUp } from "../accounts.ts";
import { authResultFor } from "../auth-results.ts";
import { loginWithPassword, loginWithSecondFactor } from "../login.ts";
import { reauthenticate, recentAuthDescription } from "../reauthenticate.ts";
import {
  authResult,
  mfaLoginInput,
  mfaRequired,
  passwordLoginInput,
  reauthenticated,
  reauthenticateInput,
  refreshTokenInput,
  signupInput,
} from "../schemas.ts";
import { endSession, rotateRefreshToken } from "../sessions.ts";
import { authData, op, signInErrors } from "./shared.ts";

/** Signing up, in and out: `accounts.signup`, `accounts.authWithPassword`, ... */
export const signInProcedures = {
  signup: op
    .open({
      method: "POST",
      path: "/accounts/signup",
      summary: "Create an account and its owner, and sign in",
      description: `Creates an account named \`account_name\` whose root user (the owner) is \`email\`, then signs that user in. \`display_name\` names both the user and the account (default: the email's local part for the user, \`account_name\` for the account). Passwords have at least 10 characters. Every sign-up attempt counts against the client address's limit (\`LOGIN_FAILURES_PER_IP\`, 429 beyond).`,
      errorResponses: { 400: "Invalid input", 409: "The email already has a user", 429: "Too many attempts" },
    })
    .input(signupInput)
    .output(authData)
    .mutation(async ({ ctx, input }) => {
      const deps = ctx.services.accounts;
      const { member, tokens } = await signUp(deps, input, ctx.request.ip);
      return { data: await authResultFor(deps, member, tokens) };
    }),

  authWithPassword: op
    .open({
      method: "POST",
      path: "/accounts/auth-with-password",
      summary: "Sign in with email and password",
      description: `Answers the Authentication result, or, when the user has enrolled a second factor, \`{mfa_required: true, mfa_token, methods}\`: complete it with \`POST /accounts/auth-with-mfa\`. An unknown email and a wrong password both answer 401 \`invalid email or password\`. A user who belongs to several accounts is signed into the account they own, else the one they joined first. Only failures count: after \`LOGIN_FAILURES_PER_PAIR\` (10) failures of one email from one client address, that pair gets 429 with Retry-After; after \`LOGIN_FAILURES_PER_IP\` (50) failures from one address over all emails, the address does; after \`LOGIN_FAILURES_PER_EMAIL\` (20) failures of one email from anywhere, its sign-ins are slowed down, never refused. A successful sign-in clears its pair's failures. Counts last \`LOGIN_FAILURE_WINDOW_SECONDS\` (15 minutes) from the first failure.`,
      errorResponses: signInErrors,
    })
    .input(passwordLoginInput)
    .output(z.object({ data: z.union([authResult, mfaRequired]) }))
    .mutation(async ({ ctx, input }) => ({
      data: await loginWithPassword(ctx.services.accounts, input, ctx.request.ip),
    })),

  authWithMfa: op
    .open({
      method: "POST",
      path: "/accounts/auth-with-mfa",
      summary: "Complete a sign-in with a second factor",
      description: `Takes the \`mfa_token\` of a password sign-in and either \`totp_code\` (6 digits; each code is accepted once) or \`passkey\` (a WebAuthn assertion over the challenge of \`POST /accounts/passkeys/auth-options\`). The MFA token is spent on success. Wrong factors count like failed sign-ins, in tallies of their own (429 for the email and address past the limit).`,
      errorResponses: signInErrors,
    })
    .input(mfaLoginInput)
    .output(authData)
    .mutation(async ({ ctx, input }) => ({
      data: await loginWithSecondFactor(ctx.services.accounts, input, ctx.request.ip),
    })),

  refresh: op
    .open({
      method: "POST",
      path: "/accounts/refresh",
      summary: "Exchange a refresh token for new tokens",
      description: `Rotation: the refresh token given stops working and a new one is returned with a new access token. Presenting a refresh token that was already exchanged ends its whole sign-in session: the newer refresh token and the session's access tokens stop working too. Within \`REFRESH_REUSE_GRACE_S\` (10) seconds of the exchange a second presentation (two tabs refreshing at once) is not reuse: it gets tokens of its own in the same session.`,
      errorResponses: { 400: "Invalid input", 401: "Refresh token invalid, expired or reused" },
    })
    .input(refreshTokenInput)
    .output(authData)
    .mutation(async ({ ctx, input }) => {
      const deps = ctx.services.accounts;
      const { member, tokens } = await rotateRefreshToken(deps, input.refresh_token);
      return { data: await authResultFor(deps, member, tokens) };
    }),

  logout: op
    .authed({
      method: "POST",
      path: "/accounts/logout",
      summary: "End a sign-in session",
      description: `Ends the session of \`refresh_token\` when it is the caller's own: the refresh token and the session's access tokens stop working. Any other token is ignored; the answer is the same.`,
      errorResponses: withCredential,
    })
    .input(refreshTokenInput)
    .output(messageResponse)
    .mutation(
      answeringSuccess(({ ctx, input }) => endSession(ctx.services.accounts, ctx.principal, input.refresh_token)),
    ),

  reauthenticate: op
    .authed({
      method: "POST",
      path: "/accounts/reauthenticate",
      summary: "Confirm who you are again, for second-factor changes",
      description: recentAuthDescription,
      errorResponses: {
        ...withCredential,
        401: "Wrong password or code",
        429: "Too many attempts (see Retry-After)",
      },
    })
    .input(reauthenticateInput)
    .output(z.object({ data: reauthenticated }))
    .mutation(async ({ ctx, input }) => ({
      data: await reauthenticate(ctx.services.accounts, ctx.principal, input, ctx.request.ip),
    })),
};
