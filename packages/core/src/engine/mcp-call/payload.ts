/**
 * The `mcp.call` payload: which server (an http(s) URL, or a server of the registry mirror by
 * name), which tool, its arguments and the headers sent with every request to the server.
 */
import { z } from "zod";
import { stepHeaders } from "../header-schema.ts";
import { StepFailure } from "../step-failure.ts";

export const mcpServerUrl = z
  .string({ error: "is required" })
  .refine((text) => URL.canParse(text) && /^https?:$/.test(new URL(text).protocol), {
    error: "must be an absolute http:// or https:// URL",
  });

export const mcpCallPayloadSchema = z.object({
  server: z.union([mcpServerUrl, z.strictObject({ registry: z.string().min(1, "is required").max(200) })], {
    error: 'must be an http(s) URL or {"registry": "<server name>"}',
  }),
  tool: z.string({ error: "is required" }).min(1, "is required").max(128),
  arguments: z.record(z.string(), z.unknown(), { error: "must be an object" }).default({}),
  headers: stepHeaders,
});

export type McpCallPayload = z.infer<typeof mcpCallPayloadSchema>;

/** The payload as a step runs it; one that does not fit fails the step for good, naming the field. */
export function parseMcpCallPayload(payload: unknown): McpCallPayload {
  const result = mcpCallPayloadSchema.safeParse(payload);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => `${["payload", ...issue.path].join(".")} ${issue.message}`);
  throw new StepFailure(`mcp.call: ${problems.join("; ")}`, false);
}

/** Where a payload's server is, for messages: its URL, or the registry name. */
export const serverLabel = (server: McpCallPayload["server"]) =>
  typeof server === "string" ? server : `registry server "${server.registry}"`;
