import { operations, router } from "../../trpc.ts";
import { registryPage, registryQuery, registryTools, registryToolsInput } from "./schemas.ts";
import { listRegistryServerTools, MAX_TOOLS_WAIT_MS } from "./tools.ts";

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

  tools: op
    .authed({
      method: "POST",
      path: "/hub/mcp/registry/tools",
      operationId: "listMcpRegistryServerTools",
      summary: "List the tools of a registry server",
      description: `Asks a server of the registry mirror for its tools (\`tools/list\`, every page) and answers \`{data: {name, version, remote, tools}}\`: each tool's \`name\`, \`description\` and \`inputSchema\` (as MCP spells them), what an \`mcp.call\` step with \`server: {"registry": name}\` needs. The server's latest version is asked at its \`streamable-http\` remote, the one such a step calls, through the same MCP client and address guard (\`ALLOW_PRIVATE_NETWORK\`, \`HTTP_REQUEST_ALLOWED_NETWORKS\`). \`headers\` are sent with every request to it (text, and \`{{secrets.<key>}}\` of the account's secrets), for servers that need a credential. The list is read afresh each time, never answered from another request's. A POST because its \`headers\` may hold credentials, kept out of URLs: it changes nothing. 404 when the mirror has no server of that name; 409 when its latest version has no streamable-http remote (the error names the remotes it has: an \`sse\` remote, or none for a server published only as packages to run locally); 400 for invalid \`headers\`, naming the field; 502 when the server cannot be reached, is refused by the address guard, or answers an error (its text is given); 504 when it has not listed its tools within \`MCP_REGISTRY_TIMEOUT_MS\` (at most ${MAX_TOOLS_WAIT_MS} ms). Until the mirror has completed its first sync, the request waits for it as \`GET /hub/mcp/registry\` does (503 with \`Retry-After\` meanwhile).`,
      errorResponses: {
        400: "Invalid input",
        401: "Credential missing or invalid",
        403: "Not allowed",
        404: "No server of that name in the mirror",
        409: "The server has no streamable-http remote",
        502: "The server could not be reached, was refused by the address guard, or answered an error",
        503: "The mirror is still being filled for the first time",
        504: "The server did not list its tools in time",
      },
    })
    .input(registryToolsInput)
    .output(registryTools)
    .mutation(({ ctx, input }) =>
      listRegistryServerTools(
        {
          ...ctx.services,
          timeoutMs: Math.min(ctx.services.config.registry.timeoutMs, MAX_TOOLS_WAIT_MS),
        },
        ctx.principal.accountId,
        input,
      ),
    ),
});
