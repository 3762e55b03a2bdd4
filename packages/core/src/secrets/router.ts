import { z } from "zod";
import { answeringSuccess, messageResponse, withCredential } from "../schemas.ts";
import { operations, router } from "../trpc.ts";
import { putSecretInput, secret, secretEntry, secretKeyInput } from "./schemas.ts";
import { deleteSecret, listSecrets, putSecret, readSecret } from "./secrets.ts";

const op = operations(["secrets"]);
const keyRule =
  "Keys are 1-128 letters, digits, `_` or `-` (case-sensitive), so that a flow can name any of them as `{{secrets.<key>}}`.";

export const secretsRouter = router({
  get: op
    .authed({
      method: "GET",
      path: "/secrets/{key}",
      summary: "Read a secret",
      description: `Answers the plaintext value. 404 \`resource not found\` when the account has no such key; 500 \`error retrieving secret\` when the stored value cannot be opened (it was sealed with a key SECRETS_KEY no longer lists). ${keyRule}`,
      errorResponses: { ...withCredential, 404: "No such key", 500: "The value cannot be opened" },
    })
    .input(secretKeyInput)
    .output(secret)
    .query(async ({ ctx, input }) => ({
      key: input.key,
      value: await readSecret(ctx.services, ctx.principal.accountId, input.key),
    })),

  put: op
    .authed({
      method: "PUT",
      path: "/secrets/{key}",
      summary: "Create a secret or replace its value",
      description: `The value is a non-empty string of at most 65,536 bytes (UTF-8), sealed with AES-256-GCM under the current SECRETS_KEY before it is stored; it is never logged or listed. ${keyRule}`,
      errorResponses: withCredential,
    })
    .input(putSecretInput)
    .output(messageResponse)
    .mutation(
      answeringSuccess(({ ctx, input }) => putSecret(ctx.services, ctx.principal.accountId, input.key, input.value)),
    ),

  delete: op
    .authed({
      method: "DELETE",
      path: "/secrets/{key}",
      summary: "Delete a secret",
      description: "404 `resource not found` when the account has no such key.",
      errorResponses: { ...withCredential, 404: "No such key" },
    })
    .input(secretKeyInput)
    .output(messageResponse)
    .mutation(answeringSuccess(({ ctx, input }) => deleteSecret(ctx.services, ctx.principal.accountId, input.key))),

  list: op
    .authed({
      method: "GET",
      path: "/secrets",
      summary: "List the account's secret keys",
      description:
        "Every key of the account, sorted, with when its value was last written (Unix seconds). Never values.",
      errorResponses: withCredential,
    })
    .input(z.void())
    .output(z.object({ data: z.array(secretEntry) }))
    .query(async ({ ctx }) => ({ data: await listSecrets(ctx.services, ctx.principal.accountId) })),
});
