import { type Kysely, sql } from "kysely";

/**
 * Flows as MCP tools (issue 32): a flow (and each revision, which snapshots its definition)
 * may be marked as a tool of the account's MCP endpoint, `{tool, description, input_schema,
 * output_schema}`. A tool name names one live flow of an account: the unique index holds it
 * across concurrent saves, and a deleted flow gives its name back.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table flows add column mcp jsonb`.execute(db);
  await sql`alter table flow_revisions add column mcp jsonb`.execute(db);
  await sql`
    create unique index flows_mcp_tool on flows (account_id, (mcp ->> 'tool'))
    where mcp is not null and deleted_at is null`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index flows_mcp_tool`.execute(db);
  await sql`alter table flow_revisions drop column mcp`.execute(db);
  await sql`alter table flows drop column mcp`.execute(db);
}
