import { z } from "zod";
import { answeringSuccess, messageResponse, tooManyTemplates, withCredential } from "../../schemas.ts";
import { requireSecretReads, secretReferences } from "../../secrets/references.ts";
import { operations, router } from "../../trpc.ts";
import { createNode, deleteNode, getNode, listNodes, updateNode } from "./nodes.ts";
import {
  createNodeInput,
  createNodeOutput,
  listNodesInput,
  node,
  nodeIdInput,
  updateNodeInput,
  updateNodeOutput,
} from "./schemas.ts";

const op = operations(["hub"]);
const dataRules = `\`data\`: \`name\` (1-200 characters), \`description\` (at most 2000, default empty), \`node_type\` (\`function\`), \`subject\` (a built-in function: \`http.request\`, \`kv.get\`, \`kv.put\`, \`stream.publish\`, \`transform\`, \`respond\`, \`delay\`, \`js\`), \`payload\` (a JSON object of at most 64 KiB; template references are checked here, and a malformed one is a 400 naming its field, e.g. \`data.payload.url: unclosed template reference\`; saving a \`{{secrets.<key>}}\` reference needs the right to read that secret, so an API key must be allowed \`GET /secrets/<key>\`, else 403), \`options\` (\`timeout\` ms 1-900000, default 30000; \`attempts\` 1-20, default 3; \`backoff_ms\` 1-3600000, default 1000; unknown options are refused).`;
const idRule =
  "An id that is not a UUID is 400 `invalid input: id: must be a UUID`; a UUID the account has no node with is 404 `node not found`.";

export const nodesRouter = router({
  create: op
    .definition({
      method: "POST",
      path: "/hub/nodes",
      summary: "Create a node template in a collection",
      description: `Answers the node's subject (\`nodes.<id>\`), its collection, its data with the assigned id, \`type: "created"\` and \`modified\` (Unix seconds). \`collection\` is a subject: tokens of letters, digits, \`_\` or \`-\` joined by dots, at most 128 characters. ${dataRules}`,
      errorResponses: { ...withCredential, ...tooManyTemplates },
    })
    .input(createNodeInput)
    .output(createNodeOutput)
    .mutation(async ({ ctx, input }) => {
      requireSecretReads(ctx.principal, secretReferences(input.data.payload, "data.payload"));
      const created = await createNode(ctx.services.db, ctx.principal.accountId, input.collection, input.data);
      const { subject, collection, data, modified } = created;
      return { subject, collection, data, type: "created" as const, modified };
    }),

  list: op
    .authed({
      method: "GET",
      path: "/hub/nodes",
      summary: "List node templates",
      description: "The account's nodes of `collection`, or all of them when it is absent, oldest first.",
      errorResponses: withCredential,
    })
    .input(listNodesInput)
    .output(z.object({ data: z.array(node) }))
    .query(async ({ ctx, input }) => ({
      data: await listNodes(ctx.services.db, ctx.principal.accountId, input.collection),
    })),

  get: op
    .authed({
      method: "GET",
      path: "/hub/nodes/{id}",
      summary: "Read a node template",
      description: idRule,
      errorResponses: { ...withCredential, 404: "No such node" },
    })
    .input(nodeIdInput)
    .output(node)
    .query(({ ctx, input }) => getNode(ctx.services.db, ctx.principal.accountId, input.id)),

  update: op
    .definition({
      method: "PUT",
      path: "/hub/nodes/{id}",
      summary: "Replace a node template's data",
      description: `Replaces the whole of \`data\` (defaults apply to what it leaves out, as on creation); \`collection\`, when given, moves the node. The id and subject stay. Answers the node with \`type: "updated"\`. ${dataRules} ${idRule}`,
      errorResponses: { ...withCredential, 404: "No such node", ...tooManyTemplates },
    })
    .input(updateNodeInput)
    .output(updateNodeOutput)
    .mutation(async ({ ctx, input }) => {
      requireSecretReads(ctx.principal, secretReferences(input.data.payload, "data.payload"));
      return {
        ...(await updateNode(ctx.services.db, ctx.principal.accountId, input.id, input)),
        type: "updated" as const,
      };
    }),

  delete: op
    .authed({
      method: "DELETE",
      path: "/hub/nodes/{id}",
      summary: "Delete a node template",
      description: idRule,
      errorResponses: { ...withCredential, 404: "No such node" },
    })
    .input(nodeIdInput)
    .output(messageResponse)
    .mutation(answeringSuccess(({ ctx, input }) => deleteNode(ctx.services.db, ctx.principal.accountId, input.id))),
});
