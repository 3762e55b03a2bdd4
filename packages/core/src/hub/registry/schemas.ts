import { z } from "zod";
import { mcpCallPayloadSchema } from "../../engine/mcp-call/payload.ts";
import { queryBoolean } from "../../schemas.ts";
import { OFFICIAL_META } from "./upstream.ts";

/** Page sizes: the spec's default and maximum. */
export const DEFAULT_LIMIT = 30;
export const MAX_LIMIT = 100;
/** The longest search text; each of its words must occur. */
export const MAX_SEARCH = 200;

const limitRule = `must be a whole number from 1 to ${MAX_LIMIT}`;

export const registryQuery = z.object({
  search: z
    .string()
    .max(MAX_SEARCH, { error: `must be at most ${MAX_SEARCH} characters` })
    .optional()
    .meta({
      description: `Words (at most ${MAX_SEARCH} characters in all) that must each occur, ignoring case, in the server's name or description, as a substring (\`git\` finds \`io.github.*\`). Results are ranked: the name equal to the search text, then names containing it, then names containing every word, then matches in the description only; alphabetically (name, then version) within each rank. Empty: no search.`,
    }),
  limit: z
    .number({ error: limitRule })
    .int({ error: limitRule })
    .min(1, { error: limitRule })
    .max(MAX_LIMIT, { error: limitRule })
    .default(DEFAULT_LIMIT)
    .meta({ description: `Page size, 1-${MAX_LIMIT} (default ${DEFAULT_LIMIT}).` }),
  cursor: z.string().min(1).max(2048, { error: "is not a next_cursor of this query" }).optional().meta({
    description:
      "The next_cursor of a previous response, with the same search, updated_since and latest_only. Pages go on after the last entry shown, so entries added or removed meanwhile never repeat or shift the rest.",
  }),
  updated_since: z.iso
    .datetime({ offset: true, error: "must be an RFC 3339 date-time with an offset, e.g. 2025-05-16T19:15:30Z" })
    .optional()
    .meta({ description: "Only servers updated on or after this RFC 3339 time (e.g. `2025-05-16T19:15:30Z`)." }),
  latest_only: queryBoolean
    .optional()
    .meta({ description: "`true`: only the latest version of each server (`true`/`false`/`1`/`0`)." }),
});

export type RegistryQuery = z.infer<typeof registryQuery>;

/** A remote as the server publishes it: kept as published, so its fields are described, not checked. */
const registryRemote = z.looseObject({}).meta({
  id: "RegistryRemote",
  description:
    "One way to reach the server, as published: `type` is its transport (`streamable-http`, which `mcp.call` steps and `POST /hub/mcp/registry/tools` use, or `sse`), `url` its address, and `headers` (when present) the headers it expects, each with `name`, `description`, `isRequired` and `isSecret` (e.g. an authorization token).",
});

export const registryServer = z
  .looseObject({
    name: z.string().meta({ description: "Registry identifier of the server (e.g. `io.github.owner/name`)." }),
    description: z.string().meta({ description: "Empty when the server publishes none." }),
    version: z.string(),
    remotes: z.array(registryRemote).meta({
      description:
        "Connection details (transport `type`, `url`, ...); empty when the server publishes none (a server published only as `packages` runs locally and has no remote to call).",
    }),
    packages: z.array(z.looseObject({})).optional(),
    _meta: z
      .record(z.string(), z.unknown())
      .optional()
      .meta({
        description: `The registry's metadata: \`${OFFICIAL_META}\` holds \`status\` (\`active\` or \`deprecated\`; deleted servers are left out), \`publishedAt\`, \`updatedAt\`, \`statusChangedAt\` and \`isLatest\`; a publisher's own keys are kept beside it.`,
      }),
  })
  .meta({
    id: "RegistryServer",
    description: "A public registry server entry: the fields of its server.json, plus `_meta`; may carry more fields.",
  });

export type RegistryServer = z.infer<typeof registryServer>;

export const registryPage = z.object({
  servers: z.array(registryServer),
  next_cursor: z.string().optional().meta({ description: "Pass back as cursor; absent on the last page." }),
  received: z.number().int().meta({ description: "Entries in servers on this page." }),
  total: z.number().int().meta({ description: "Entries matching the query across all pages, counted exactly." }),
});

export type RegistryPage = z.infer<typeof registryPage>;

export const registryToolsInput = z.object({
  name: z
    .string({ error: "is required" })
    .min(1, { error: "is required" })
    .max(200, { error: "must be at most 200 characters" })
    .meta({ description: "The server's registry name (e.g. `io.github.owner/name`); its latest version is asked." }),
  headers: mcpCallPayloadSchema.shape.headers.meta({
    description:
      'Headers sent with every request to the server, as an `mcp.call` step\'s `headers` (e.g. `{"authorization": "Bearer {{secrets.token}}"}` for a server that needs a credential): text, and `{{secrets.<key>}}` of the account\'s secrets. A list read with headers is never shown to a request with other headers.',
  }),
});

export type RegistryToolsInput = z.infer<typeof registryToolsInput>;

export const registryTool = z
  .looseObject({
    name: z.string().meta({ description: "The tool's name: an `mcp.call` step's `tool`." }),
    title: z.string().optional(),
    description: z.string().optional(),
    inputSchema: z
      .record(z.string(), z.unknown())
      .meta({ description: "JSON Schema of the tool's arguments: an `mcp.call` step's `arguments`." }),
    outputSchema: z.record(z.string(), z.unknown()).optional(),
  })
  .meta({
    id: "RegistryTool",
    description: "A tool as the server describes it in `tools/list` (the MCP `Tool`, field names as MCP spells them).",
  });

export const registryTools = z.object({
  data: z.object({
    name: z.string(),
    version: z.string().meta({ description: "The server's latest version in the mirror: the one asked." }),
    remote: z.object({ type: z.literal("streamable-http"), url: z.string() }).meta({
      description: "The remote asked: the same one an `mcp.call` step with `server: {registry: name}` calls.",
    }),
    tools: z.array(registryTool),
  }),
});

export type RegistryTools = z.infer<typeof registryTools>;
