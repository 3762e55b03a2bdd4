import { notImplemented } from "../not-implemented.ts";
import { authedProcedure, router } from "../trpc.ts";
import { nodesRouter } from "./nodes/router.ts";
import { registryPage, registryQuery } from "./schemas.ts";

export const hubRouter = router({
  registry: router({
    list: authedProcedure
      .meta({
        openapi: {
          method: "GET",
          path: "/hub/mcp/registry",
          operationId: "listMcpRegistryServers",
          tags: ["hub"],
          summary: "Search the public registry of MCP tool servers",
          protect: true,
          errorResponses: { 400: "Invalid query", 401: "Credential missing or invalid", 502: "Upstream unusable" },
        },
      })
      .input(registryQuery)
      .output(registryPage)
      .query(() => notImplemented()),
  }),
  nodes: nodesRouter,
});
