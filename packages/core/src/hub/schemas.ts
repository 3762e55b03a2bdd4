import { z } from "zod";
import { queryBoolean } from "../schemas.ts";

export const registryQuery = z.object({
  search: z.string().optional().meta({ description: "Free-text search over server name and description." }),
  limit: z.number().int().min(1).max(100).default(30).meta({ description: "Page size (1–100)." }),
  cursor: z.string().min(1).optional().meta({ description: "A next_cursor value of a previous response." }),
  updated_since: z.iso
    .datetime({ offset: true })
    .optional()
    .meta({ description: "Only servers updated on or after this RFC 3339 time." }),
  latest_only: queryBoolean.optional().meta({ description: "Only the latest version of each server (true/false)." }),
});

export const registryServer = z
  .looseObject({
    name: z.string(),
    description: z.string(),
    version: z.string(),
    remotes: z.array(z.looseObject({})),
  })
  .meta({ id: "RegistryServer", description: "A public registry server entry; may carry more fields." });

export const registryPage = z.object({
  servers: z.array(registryServer),
  next_cursor: z.string().optional().meta({ description: "Pass back as cursor; absent on the last page." }),
  received: z.number().int().meta({ description: "Entries in servers on this page." }),
  total: z.number().int().meta({ description: "Entries matching the query across all pages." }),
});
