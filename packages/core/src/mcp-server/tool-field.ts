import type { McpTool } from "@platform/db";
import { z } from "zod";
import type { Same } from "../same-shape.ts";
import { compileToolSchema } from "./json-schema.ts";

/**
 * A flow's `mcp` field (issue 32), as clients write and read it: the flow offered as a tool
 * of the account's MCP endpoint (`POST /mcp`), under a name unique among the account's flows.
 */

/**
 * The key a tool's flow is kept under in the definition cache (see mcp-server/catalog.ts): a
 * save of a flow that has or had a tool drops both names' entries, so a call is checked against
 * the schemas as last saved (a lost announcement leaves another process behind for at most the
 * cache's 5 s); the run always takes the flow's current revision.
 */
export const toolCacheKey = (accountId: string, tool: string) => ["tool", accountId, tool] as const;

/** MCP's own rule for tool names. */
export const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
export const MAX_TOOL_DESCRIPTION = 2000;
/** The most a tool's schema may hold, in bytes of JSON. */
export const MAX_TOOL_SCHEMA_BYTES = 32_768;

const schemaField = (description: string) =>
  z.record(z.string(), z.unknown(), { error: "must be a JSON Schema object" }).meta({ description });

const SCHEMA_RULES = `An object schema (\`"type": "object"\`) of JSON Schema 2020-12, or draft-07 when its \`$schema\` says so, of at most ${MAX_TOOL_SCHEMA_BYTES.toLocaleString("en")} bytes of JSON; it is compiled when the flow is saved (an invalid schema, an unresolved \`$ref\` or a \`pattern\` RE2 cannot read is 400 naming the field), and \`pattern\`s run on RE2.`;

export const mcpToolInput = z
  .strictObject({
    tool: z
      .string({ error: "must be a string" })
      .regex(TOOL_NAME, { error: "must be 1 to 64 letters, digits, _ or - (MCP's tool names)" })
      .meta({ description: "The tool's name, unique among the account's flows (another flow's is 409)." }),
    description: z
      .string({ error: "must be a string" })
      .min(1, { error: "must not be empty: a client's model reads it to choose the tool" })
      .max(MAX_TOOL_DESCRIPTION, { error: `must be at most ${MAX_TOOL_DESCRIPTION} characters` })
      .meta({ description: "What the tool does, for the model that chooses it." }),
    input_schema: schemaField(
      `The arguments the tool takes; a call whose arguments it refuses starts no run. ${SCHEMA_RULES}`,
    ),
    output_schema: schemaField(
      `The object the flow answers, when it promises one: a run whose output it refuses answers \`isError\`. ${SCHEMA_RULES}`,
    )
      .nullish()
      .transform((value) => value ?? null),
  })
  .superRefine((tool, context) => {
    for (const field of ["input_schema", "output_schema"] as const) {
      const schema = tool[field];
      if (schema === null) continue;
      const bytes = Buffer.byteLength(JSON.stringify(schema));
      if (bytes > MAX_TOOL_SCHEMA_BYTES) {
        context.addIssue({
          code: "custom",
          path: [field],
          message: `must be at most ${MAX_TOOL_SCHEMA_BYTES.toLocaleString("en")} bytes of JSON (this one is ${bytes.toLocaleString("en")})`,
        });
        continue;
      }
      const compiled = compileToolSchema(schema, field);
      if (compiled.ok) continue;
      for (const { path, message } of compiled.problems)
        context.addIssue({ code: "custom", path: path.split("."), message });
    }
  })
  .nullish()
  .transform((value) => value ?? null)
  .meta({
    description:
      "Offers the flow as a tool of the account's MCP endpoint (`POST /mcp`, see docs/guide/mcp.md): `tools/list` shows it to credentials that may start the flow (an API key whose `allowed_paths` allow `POST /flows/{id}/runs`), and `tools/call` checks the arguments against `input_schema` and starts a run with them as its trigger data, as `POST /flows/{id}/runs?wait=true` does. Absent or null: not a tool.",
  });

export const mcpToolOutput = z
  .object({
    tool: z.string(),
    description: z.string(),
    input_schema: z.record(z.string(), z.unknown()),
    output_schema: z.record(z.string(), z.unknown()).nullable(),
  })
  .nullable()
  .meta({ description: "The flow as a tool of the account's MCP endpoint; null: not a tool." });

/** A flow's tool is answered as it is stored. */
const _toolIsStored: Same<z.infer<typeof mcpToolOutput>, McpTool | null> = true;
