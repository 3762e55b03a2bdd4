import { z } from "zod";
import { answeringSuccess, messageResponse, withCredential } from "../../schemas.ts";
import { router } from "../../trpc.ts";
import { requireSignedInUser } from "../permissions.ts";
import { totpCodeInput, totpSetup } from "../schemas.ts";
import { beginTotpSetup, confirmTotpSetup, disableTotp } from "../totp.ts";
import { noInput, op } from "./shared.ts";

/** `accounts.totp.*`: enrolling TOTP as a second factor. */
export const totpRouter = router({
  setup: op
    .authed({
      method: "POST",
      path: "/accounts/totp/setup",
      summary: "Start TOTP enrolment",
      description: `Returns a new secret and its \`otpauth://\` URL (for a QR code). TOTP is not required at sign-in until a code is confirmed with \`POST /accounts/totp/verify\`. Needs a Bearer token (not an API key) from a recent sign-in (see \`POST /accounts/reauthenticate\`); 409 when TOTP is already enabled.`,
      errorResponses: { ...withCredential, 409: "TOTP already enabled" },
    })
    .input(noInput)
    .output(z.object({ data: totpSetup }))
    .mutation(async ({ ctx }) => {
      requireSignedInUser(ctx.principal);
      return { data: await beginTotpSetup(ctx.services.accounts, ctx.principal) };
    }),
  verify: op
    .authed({
      method: "POST",
      path: "/accounts/totp/verify",
      summary: "Confirm TOTP enrolment with a code",
      description: `Enables TOTP when \`code\` matches the secret of \`POST /accounts/totp/setup\`; from then on sign-in asks for a code. Needs a Bearer token (not an API key) from a recent sign-in. Wrong codes count like failed second factors.`,
      errorResponses: { ...withCredential, 409: "TOTP already enabled", 429: "Too many attempts" },
    })
    .input(totpCodeInput)
    .output(messageResponse)
    .mutation(
      answeringSuccess(({ ctx, input }) => {
        requireSignedInUser(ctx.principal);
        return confirmTotpSetup(ctx.services.accounts, ctx.principal, input.code, ctx.request.ip);
      }),
    ),
  disable: op
    .authed({
      method: "DELETE",
      path: "/accounts/totp",
      summary: "Turn TOTP off",
      description: `Removes the caller's TOTP: sign-in no longer asks for a code (a passkey, if registered, is still asked). Needs a Bearer token from a recent sign-in: within \`RECENT_AUTH_SECONDS\` (10 minutes) of signing in or of \`POST /accounts/reauthenticate\`, else 403. 404 when TOTP is not enabled.`,
      errorResponses: { ...withCredential, 404: "TOTP is not enabled" },
    })
    .input(noInput)
    .output(messageResponse)
    .mutation(answeringSuccess(({ ctx }) => disableTotp(ctx.services.accounts, ctx.principal))),
});
