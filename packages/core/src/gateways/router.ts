import { notImplemented } from "../not-implemented.ts";
import { messageResponse } from "../schemas.ts";
import { authedProcedure, router } from "../trpc.ts";
import { deleteMappingInput, gatewayOutput, topicInput } from "./schemas.ts";

export const gatewayRouter = router({
  get: authedProcedure
    .meta({
      openapi: {
        method: "GET",
        path: "/gateway/{gateway_topic}",
        tags: ["gateway"],
        summary: "Read a gateway",
        protect: true,
      },
    })
    .input(topicInput)
    .output(gatewayOutput)
    .query(() => notImplemented()),
  delete: authedProcedure
    .meta({
      openapi: {
        method: "DELETE",
        path: "/gateway/{gateway_topic}",
        tags: ["gateway"],
        summary: "Mark a gateway deleted",
        protect: true,
      },
    })
    .input(topicInput)
    .output(messageResponse)
    .mutation(() => notImplemented()),
  mappings: router({
    delete: authedProcedure
      .meta({
        openapi: {
          method: "DELETE",
          path: "/gateway/{gateway_topic}/mapping/details",
          tags: ["gateway"],
          summary: "Mark a mapping of a gateway deleted",
          description: "The mapping is named by the query parameters `method` and `path`, both required.",
          protect: true,
        },
      })
      .input(deleteMappingInput)
      .output(messageResponse)
      .mutation(() => notImplemented()),
  }),
});
