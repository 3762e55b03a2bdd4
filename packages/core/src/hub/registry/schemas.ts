import { z } from "zod";
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

export const registryServer = z
  .looseObject({
    name: z.string().meta({ description: "Registry identifier of the server (e.g. `io.github.owner/name`)." }),
    description: z.string().meta({ description: "Empty when the server publishes none." }),
    version: z.string(),
    remotes: z.array(z.looseObject({})).meta({
      description: "Connection details (transport `type`, `url`, ...); empty when the server publishes none.",
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

export const registryPage = z.object({
  servers: z.array(registryServer),
  next_cursor: z.string().optional().meta({ description: "Pass back as cursor; absent on the last page." }),
  received: z.number().int().meta({ description: "Entries in servers on this page." }),
  total: z.number().int().meta({ description: "Entries matching the query across all pages, counted exactly." }),
});

export type RegistryPage = z.infer<typeof registryPage>;
