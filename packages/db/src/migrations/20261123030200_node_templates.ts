import { type Kysely, sql } from "kysely";

/**
 * Node templates: units of work flows run as steps, grouped in collections. The
 * function to call (`subject`), its `payload` (JSON, strings may hold template
 * references) and its retry options.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("node_templates")
    .addColumn("id", "uuid", (c) => c.primaryKey())
    .addColumn("account_id", "text", (c) => c.notNull().references("accounts.id").onDelete("cascade"))
    .addColumn("collection", "text", (c) => c.notNull())
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("description", "text", (c) => c.notNull())
    .addColumn("node_type", "text", (c) => c.notNull())
    .addColumn("subject", "text", (c) => c.notNull())
    .addColumn("payload", "jsonb", (c) => c.notNull())
    .addColumn("timeout_ms", "integer", (c) => c.notNull())
    .addColumn("attempts", "integer", (c) => c.notNull())
    .addColumn("backoff_ms", "integer", (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addCheckConstraint("node_templates_options_positive", sql`timeout_ms > 0 and attempts > 0 and backoff_ms > 0`)
    .execute();
  await db.schema
    .createIndex("node_templates_account_collection")
    .on("node_templates")
    .columns(["account_id", "collection", "created_at"])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("node_templates").ifExists().execute();
}
