import { z } from "zod";
import { answeringSuccess, messageResponse, withCredential } from "../schemas.ts";
import { operations, router } from "../trpc.ts";
import { createGateway, deleteGateway, getGateway, listGateways, updateGateway } from "./gateways.ts";
import { createMapping, deleteMapping, listMappings } from "./mappings.ts";
import {
  createGatewayInput,
  createMappingInput,
  deleteMappingInput,
  gateway,
  gatewayOutput,
  mapping,
  topicInput,
  updateGatewayInput,
} from "./schemas.ts";

const op = operations(["gateway"]);
const missing = "A missing (or deleted) gateway is 404 `The requested resource does not exist`.";
const notFound = { ...withCredential, 404: "No such gateway" };
const withMetadata = (body: z.infer<typeof gateway>) => ({ body, metadata: { subject: body.subject } });

export const gatewayRouter = router({
  create: op
    .authed({
      method: "POST",
      path: "/gateway",
      summary: "Create a gateway",
      description:
        "Its `url` is GATEWAY_BASE_URL/<subject> (default PUBLIC_URL/gw/<subject>); requests there whose method and path match a mapping run the mapped flow and answer with its result. `subject` is generated when absent. Subjects are unique across accounts, whatever their case, and stay reserved after their gateway is deleted: one that another account holds is 409; your own deleted one gives a fresh gateway, without the old mappings.",
      errorResponses: { ...withCredential, 409: "The subject is taken" },
    })
    .input(createGatewayInput)
    .output(gatewayOutput)
    .mutation(async ({ ctx, input }) =>
      withMetadata(await createGateway(ctx.services, ctx.principal.accountId, input)),
    ),

  list: op
    .authed({
      method: "GET",
      path: "/gateway",
      summary: "List gateways",
      description: "The account's gateways, oldest first; deleted ones are left out.",
      errorResponses: withCredential,
    })
    .input(z.void())
    .output(z.object({ data: z.array(gateway) }))
    .query(async ({ ctx }) => ({ data: await listGateways(ctx.services, ctx.principal.accountId) })),

  get: op
    .authed({
      method: "GET",
      path: "/gateway/{gateway_topic}",
      summary: "Read a gateway",
      description: missing,
      errorResponses: notFound,
    })
    .input(topicInput)
    .output(gatewayOutput)
    .query(async ({ ctx, input }) =>
      withMetadata(await getGateway(ctx.services, ctx.principal.accountId, input.gateway_topic)),
    ),

  update: op
    .authed({
      method: "PATCH",
      path: "/gateway/{gateway_topic}",
      summary: "Change a gateway",
      description: `Changes the fields given; the others stay. \`subject\` and \`url\` cannot be changed (400). A new \`limit\` or \`active\` applies to the next request, in every API process. ${missing}`,
      errorResponses: notFound,
    })
    .input(updateGatewayInput)
    .output(gatewayOutput)
    .mutation(async ({ ctx, input }) =>
      withMetadata(await updateGateway(ctx.services, ctx.principal.accountId, input.gateway_topic, input)),
    ),

  delete: op
    .authed({
      method: "DELETE",
      path: "/gateway/{gateway_topic}",
      summary: "Mark a gateway deleted",
      description: `Its address answers 404 from now on. ${missing}`,
      errorResponses: notFound,
    })
    .input(topicInput)
    .output(messageResponse)
    .mutation(
      answeringSuccess(({ ctx, input }) => deleteGateway(ctx.services, ctx.principal.accountId, input.gateway_topic)),
    ),

  mappings: router({
    create: op
      .authed({
        method: "POST",
        path: "/gateway/{gateway_topic}/mapping",
        summary: "Map a method and path of a gateway to a flow",
        description: `\`flow_id\` must name a flow of the same account (400 otherwise). A path is \`/\` or segments of letters, digits, \`-\`, \`.\`, \`_\` or \`~\`, and parameters \`:name\` matching any one segment (\`/orders/:id\`); the flow gets them as \`trigger.params\`. A literal segment wins over a parameter. 409 when a live mapping of the method has the same path, or one differing only in parameter names. ${missing}`,
        errorResponses: { ...notFound, 409: "The method and path are mapped" },
      })
      .input(createMappingInput)
      .output(z.object({ data: mapping }))
      .mutation(async ({ ctx, input }) => ({
        data: await createMapping(ctx.services, ctx.principal.accountId, input.gateway_topic, input),
      })),

    list: op
      .authed({
        method: "GET",
        path: "/gateway/{gateway_topic}/mapping",
        summary: "List the mappings of a gateway",
        description: `Live mappings, oldest first. ${missing}`,
        errorResponses: notFound,
      })
      .input(topicInput)
      .output(z.object({ data: z.array(mapping) }))
      .query(async ({ ctx, input }) => ({
        data: await listMappings(ctx.services, ctx.principal.accountId, input.gateway_topic),
      })),

    delete: op
      .authed({
        method: "DELETE",
        path: "/gateway/{gateway_topic}/mapping/details",
        summary: "Mark a mapping of a gateway deleted",
        description:
          "The mapping is named by the query parameters `method` and `path` (as it was created), both required. A missing gateway or mapping is 404 `The requested resource does not exist`.",
        errorResponses: { ...withCredential, 404: "No such gateway or mapping" },
      })
      .input(deleteMappingInput)
      .output(messageResponse)
      .mutation(
        answeringSuccess(({ ctx, input }) =>
          deleteMapping(ctx.services, ctx.principal.accountId, input.gateway_topic, input.method, input.path),
        ),
      ),
  }),
});
