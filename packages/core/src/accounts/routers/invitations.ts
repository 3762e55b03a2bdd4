import { z } from "zod";
import { router } from "../../trpc.ts";
import { acceptInvitation } from "../invitations.ts";
import { acceptInvitationInput, authResult, mfaRequired } from "../schemas.ts";
import { op } from "./shared.ts";

/** `accounts.invitations.accept`: joining an account. */
export const invitationsRouter = router({
  accept: op
    .open({
      method: "POST",
      path: "/accounts/invitations/accept",
      summary: "Accept an invitation and sign in to the inviting account",
      description: `Takes the \`token\` of \`POST /accounts/users\`. For an email with no user, creates the user with \`password\` (at least 10 characters) and \`display_name\`. For an email that already has a user, \`password\` must be that user's current password (401 \`invalid email or password\` otherwise, counted like a failed sign-in); with a second factor enrolled the answer is \`{mfa_required: true, mfa_token, methods}\`, and completing \`POST /accounts/auth-with-mfa\` accepts the invitation. Answers the Authentication result for the inviting account. A spent, expired, revoked or unknown token is 400. A user who forgot their password resets it first (\`POST /accounts/password/forgot\`).`,
      errorResponses: {
        400: "Invalid input, or the invitation is invalid, expired or already used",
        401: "Wrong password for the existing user",
        409: "Already a member",
        429: "Too many attempts (see Retry-After)",
      },
    })
    .input(acceptInvitationInput)
    .output(z.object({ data: z.union([authResult, mfaRequired]) }))
    .mutation(async ({ ctx, input }) => ({
      data: await acceptInvitation(ctx.services.accounts, input, ctx.request.ip),
    })),
});
