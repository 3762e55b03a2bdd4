import { z } from "zod";
import { answeringSuccess, messageResponse, withCredential } from "../../schemas.ts";
import { router } from "../../trpc.ts";
import { createApiKey, deleteApiKey, listApiKeys } from "../api-keys.ts";
import { apiKeyEntry, apiKeyIdInput, createApiKeyInput, createdApiKey } from "../schemas.ts";
import { op } from "./shared.ts";

/** `accounts.apiKeys.*`: keys that act as their creator. */
export const apiKeysRouter = router({
  create: op
    .authed({
      method: "POST",
      path: "/accounts/api-keys",
      summary: "Create an API key",
      description: `The key acts as its creator, with the creator's role, and stops working if the creator leaves the account. \`key\` is shown only in this answer; send it as \`X-Api-Key\`. \`allowed_paths\` restricts it: each entry is methods and a path pattern (\`GET /accounts/users\`, \`GET,PUT /storage/kv/orders/*\`; methods GET, POST, PUT, PATCH, DELETE, HEAD counting as GET), or a bare pattern for every method; a pattern is a literal path, or a prefix ending in \`*\`. Paths under \`/hub/agent\` need a pattern that names them. A trailing slash is ignored and an encoded slash (\`%2F\`) stays part of its segment. Over tRPC the procedure's path and method are matched, and a parameter in the path (\`{id}\`) only by a prefix pattern that ends before it. Account administration: a signed-in user, or a key whose entries name \`POST /accounts/api-keys\`; a key creates only keys whose every entry is within its own (403 naming the first that is not).`,
      errorResponses: withCredential,
    })
    .input(createApiKeyInput)
    .output(z.object({ data: createdApiKey }))
    .mutation(async ({ ctx, input }) => ({ data: await createApiKey(ctx.services.accounts, ctx.principal, input) })),
  list: op
    .authed({
      method: "GET",
      path: "/accounts/api-keys",
      summary: "List API keys",
      description: "Owners and admins see every key of the account; members see the keys they created.",
      errorResponses: withCredential,
    })
    .input(z.void())
    .output(z.object({ data: z.array(apiKeyEntry) }))
    .query(async ({ ctx }) => ({ data: await listApiKeys(ctx.services.accounts, ctx.principal) })),
  delete: op
    .authed({
      method: "DELETE",
      path: "/accounts/api-keys/{id}",
      summary: "Delete an API key",
      description:
        "Owners and admins may delete any key of the account; members the keys they created. Account administration: a signed-in user, or a key whose entries name `DELETE /accounts/api-keys/*` (or the key's own path) with the method.",
      errorResponses: { ...withCredential, 404: "No such key" },
    })
    .input(apiKeyIdInput)
    .output(messageResponse)
    .mutation(answeringSuccess(({ ctx, input }) => deleteApiKey(ctx.services.accounts, ctx.principal, input.id))),
});
