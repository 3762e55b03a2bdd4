import type { Database, McpTool } from "@platform/db";
import { type Kysely, sql } from "kysely";
import { requestAllowed } from "../accounts/path-patterns.ts";
import type { Principal } from "../caller.ts";
import type { DefinitionCache } from "../storage/definition-cache.ts";
import { toolCacheKey } from "./tool-field.ts";

/**
 * The tools a credential sees on the MCP endpoint: the account's live flows marked as tools
 * (`mcp`) that it may start. A tool is a flow's start, so an API key restricted by
 * `allowed_paths` sees a flow's tool only where they allow `POST /flows/{id}/runs`; a
 * signed-in member (an access token), like an unrestricted key, sees them all.
 */

export interface ToolFlow {
  flowId: string;
  /** The flow's current revision: what a call runs, and the key its compiled schemas are kept by. */
  revision: number;
  /** The flow's name: the tool's title, for people. */
  title: string;
  tool: McpTool;
}

/** Whether the principal may start the flow, as `POST /flows/{id}/runs` would let it. */
export function mayStart(principal: Principal, flowId: string): boolean {
  const allowed = principal.allowedPaths;
  return !allowed || requestAllowed(allowed, { method: "POST", path: `/flows/${flowId}/runs` });
}

const toolFlows = (db: Kysely<Database>, accountId: string) =>
  db
    .selectFrom("flows")
    .select(["id", "name", "revision", "mcp"])
    .where("account_id", "=", accountId)
    .where("deleted_at", "is", null)
    .where("mcp", "is not", null);

const asToolFlow = (row: { id: string; name: string; revision: number; mcp: McpTool | null }): ToolFlow | null =>
  row.mcp && { flowId: row.id, revision: row.revision, title: row.name, tool: row.mcp };

/** The tools the principal may call, by name. */
export async function listTools(db: Kysely<Database>, principal: Principal): Promise<ToolFlow[]> {
  const rows = await toolFlows(db, principal.accountId).orderBy(sql`mcp ->> 'tool'`).execute();
  return rows.flatMap((row) => {
    const tool = asToolFlow(row);
    return tool && mayStart(principal, tool.flowId) ? [tool] : [];
  });
}

/** Where a call finds its tool: the process's definition cache, which every save of a tool's flow empties. */
export interface ToolLookup {
  db: Kysely<Database>;
  storageDefinitions: DefinitionCache;
}

/**
 * The tool of that name the principal may call, or null (no such tool, or not one it may
 * start: the same to it). Kept per process (see `toolCacheKey`), so a call costs no read of
 * the flow; whether the principal may start it is judged every time.
 */
export async function findTool(deps: ToolLookup, principal: Principal, name: string): Promise<ToolFlow | null> {
  const load = async () => {
    const row = await toolFlows(deps.db, principal.accountId)
      .where(sql<boolean>`mcp ->> 'tool' = ${name}`)
      .executeTakeFirst();
    return (row && asToolFlow(row)) ?? undefined;
  };
  const tool = await deps.storageDefinitions.get(...toolCacheKey(principal.accountId, name), load);
  return tool && mayStart(principal, tool.flowId) ? tool : null;
}
