import { z } from "zod";
import { answeringSuccess, messageResponse, withCredential } from "../../schemas.ts";
import { router } from "../../trpc.ts";
import { inviteUser } from "../invitations.ts";
import { emailInput, invitedUser, inviteUserInput, userEntry } from "../schemas.ts";
import { listUsers, removeUser } from "../users.ts";
import { op } from "./shared.ts";

/** `accounts.users.*`: the people of an account and its pending invitations. */
export const usersRouter = router({
  create: op
    .authed({
      method: "POST",
      path: "/accounts/users",
      summary: "Invite a user to the account",
      description: `Owners and admins only. Creates a single-use invitation for \`email\` with \`role\` and answers it: the same answer whether or not the email already has a user. Nobody joins before accepting (\`POST /accounts/invitations/accept\`): a new email then sets its password, an existing user proves theirs. When SMTP is configured (\`SMTP_URL\`, \`MAIL_FROM\`) the link is also mailed to \`email\`; the token is returned either way, so that a deployment without mail can pass the link on. It expires after \`INVITATION_TTL_SECONDS\` (default 7 days). Inviting an email again replaces its pending invitation (the older token stops working); \`DELETE /accounts/remove-user\` revokes it. \`password\` is no longer accepted (400). 409 when the email is already a member. Account administration for people only: a signed-in owner or admin (a Bearer token); no API key invites, unrestricted or naming \`POST /accounts/users\` (403), since the invitation's token is accepted for a session of the account.`,
      errorResponses: { ...withCredential, 409: "Already a member" },
    })
    .input(inviteUserInput)
    .output(z.object({ data: invitedUser }))
    .mutation(async ({ ctx, input }) => ({ data: await inviteUser(ctx.services.accounts, ctx.principal, input) })),
  list: op
    .authed({
      method: "GET",
      path: "/accounts/users",
      summary: "List the users of the account and its pending invitations",
      description: `Members first (\`status: "active"\`), in the order they joined, then invitations not yet accepted nor expired (\`status: "invited"\`, with \`expires\`; \`display_name\` is empty until accepted).`,
      errorResponses: withCredential,
    })
    .input(z.void())
    .output(z.object({ data: z.array(userEntry) }))
    .query(async ({ ctx }) => ({ data: await listUsers(ctx.services.accounts, ctx.principal) })),
  remove: op
    .authed({
      method: "DELETE",
      path: "/accounts/remove-user",
      summary: "Remove a user from the account, or revoke their invitation",
      description: `Owners and admins only; the root user cannot be removed. The user's sign-in sessions in this account end at once (their access tokens stop working) and the API keys they created here are deleted. For an email with a pending invitation, the invitation is revoked: its token stops working. The email may be sent as a query parameter or in a JSON body. Account administration: a signed-in owner or admin, or an API key whose \`allowed_paths\` name \`DELETE /accounts/remove-user\`.`,
      errorResponses: { ...withCredential, 404: "No such user or invitation in this account" },
    })
    .input(emailInput)
    .output(messageResponse)
    .mutation(answeringSuccess(({ ctx, input }) => removeUser(ctx.services.accounts, ctx.principal, input.email))),
});
