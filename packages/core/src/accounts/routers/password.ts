import { answeringSuccess, messageResponse } from "../../schemas.ts";
import { router } from "../../trpc.ts";
import { forgotPassword, resetPassword } from "../password-reset.ts";
import { emailInput, resetPasswordInput } from "../schemas.ts";
import { op } from "./shared.ts";

const FORGOT_ANSWER = { message: "if this email has a user, a reset link is on its way" };

/** `accounts.password.*`: getting back in after forgetting the password. */
export const passwordRouter = router({
  forgot: op
    .open({
      method: "POST",
      path: "/accounts/password/forgot",
      summary: "Mail a password reset link",
      description: `Always answers 200 \`{message}\`, the same whether or not the email has a user. When it has one and SMTP is configured (\`SMTP_URL\`, \`MAIL_FROM\`), a single-use link to \`{APP_URL}/password/reset#token=...\` valid \`PASSWORD_RESET_TTL_SECONDS\` (1 hour) is mailed to it; a newer link replaces an older one. Without SMTP nothing is sent: the operator prints a link with \`bun run accounts:reset-link EMAIL\`. Asks are limited per client address (\`LOGIN_FAILURES_PER_IP\`, 429 beyond) and at most 3 mails go to one email per \`LOGIN_FAILURE_WINDOW_SECONDS\`.`,
      errorResponses: { 400: "Invalid input", 429: "Too many attempts (see Retry-After)" },
    })
    .input(emailInput)
    .output(messageResponse)
    .mutation(async ({ ctx, input }) => {
      await forgotPassword(ctx.services.accounts, input.email, ctx.request.ip);
      return FORGOT_ANSWER;
    }),
  reset: op
    .open({
      method: "POST",
      path: "/accounts/password/reset",
      summary: "Set a new password with a reset link's token",
      description: `Sets \`password\` (at least 10 characters) for the user of the link and ends every session of that user, in every account: their refresh tokens and access tokens stop working at once. A second factor, if enrolled, is still asked at the next sign-in. A spent, expired or unknown token is 400.`,
      errorResponses: { 400: "Invalid input, or the link is invalid, expired or already used" },
    })
    .input(resetPasswordInput)
    .output(messageResponse)
    .mutation(answeringSuccess(({ ctx, input }) => resetPassword(ctx.services.accounts, input))),
});
