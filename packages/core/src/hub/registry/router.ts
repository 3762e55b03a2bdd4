import { operations, router } from "../../trpc.ts";
import { registryPage, registryQuery } from "./schemas.ts";

const op = operations(["hub"]);

const description = `Searches the local mirror of the public MCP registry (\`MCP_REGISTRY_URL\`), which the worker keeps current: a full sync on first start, then an incremental one (\`updated_since\`) every \`MCP_REGISTRY_SYNC_INTERVAL_S\` seconds; deleted servers are removed, deprecated ones kept with their status. Until the mirror has completed its first sync, a request fills it from the upstream first (waiting up to 8 s: 503 with \`Retry-After\` while it is still being filled); 502 when the upstream cannot be reached or its answer cannot be parsed. \`total\` counts every entry matching the query. A bad \`limit\` (1-100), \`updated_since\` or \`cursor\` is 400 naming the parameter.`;

export const registryRouter = router({
  list: op
    .authed({
      method: "GET",
      path: "/hub/mcp/registry",
      operationId: "listMcpRegistryServers",
      summary: "Search the public registry of MCP tool servers",
      description,
      errorResponses: {
        400: "Invalid query",
        401: "Credential missing or invalid",
        403: "Not allowed",
        502: "The upstream registry could not be reached, or its answer could not be parsed",
        503: "The mirror is still being filled for the first time",
      },
    })
    .input(registryQuery)
    .output(registryPage)
    .query(({ ctx, input }) => ctx.services.registry.list(input)),
});
