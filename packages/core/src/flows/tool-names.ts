import type { Database, McpTool } from "@platform/db";
import { type Kysely, sql } from "kysely";
import { isUniqueViolation } from "../database-errors.ts";
import { DomainError, type Problem, problemText } from "../errors.ts";
import { toolCacheKey } from "../mcp-server/tool-field.ts";
import type { DefinitionCache } from "../storage/definition-cache.ts";
import type { FlowInput } from "./schemas.ts";

/**
 * A tool name (`mcp.tool`) names one live flow of an account: the unique index
 * `flows_mcp_tool` holds it across concurrent saves, and a save that would break it is 409
 * naming the field. A deleted flow gives its name back.
 */

const TOOL_INDEX = "flows_mcp_tool";

function takenProblem(tool: string): Problem {
  return { path: "mcp.tool", message: `is the tool name of another flow of the account ("${tool}"): choose another` };
}

const takenError = (tool: string) => {
  const problem = takenProblem(tool);
  return new DomainError("conflict", problemText(problem), { problems: [problem] });
};

/** A save's failure as it is answered: the index's unique violation becomes the 409; anything else passes through. */
export function toolNameTaken(error: unknown, input: Pick<FlowInput, "mcp">): unknown {
  if (!input.mcp || !isUniqueViolation(error)) return error;
  const constraint = (error as { constraint?: unknown }).constraint;
  // The flows' other unique keys are random (id, webhook id): only the tool name can clash.
  if (constraint !== undefined && constraint !== TOOL_INDEX) return error;
  return takenError(input.mcp.tool);
}

/** For `POST /flows/validate`: the problem saving `input` over flow `id` (null: a new flow) would meet, read without a lock. */
export async function toolNameProblem(
  db: Kysely<Database>,
  accountId: string,
  id: string | null,
  input: Pick<FlowInput, "mcp">,
): Promise<Problem | null> {
  if (!input.mcp) return null;
  let other = db
    .selectFrom("flows")
    .select("id")
    .where("account_id", "=", accountId)
    .where("deleted_at", "is", null)
    .where(sql<boolean>`mcp is not null and mcp ->> 'tool' = ${input.mcp.tool}`);
  if (id !== null) other = other.where("id", "!=", id);
  return (await other.executeTakeFirst()) ? takenProblem(input.mcp.tool) : null;
}

/** After a save or delete is committed: the tools the flow had and has are dropped from every process's cache. */
export async function toolsChanged(
  cache: DefinitionCache,
  accountId: string,
  tools: readonly (Pick<McpTool, "tool"> | null | undefined)[],
): Promise<void> {
  const names = new Set(tools.flatMap((tool) => (tool ? [tool.tool] : [])));
  for (const name of names) await cache.changed(...toolCacheKey(accountId, name));
}
