import { type Kysely, sql } from "kysely";

/**
 * Flows: a webhook trigger and ordered steps. The current definition lives in
 * `flow_revisions`, one immutable row per save, so that a run executes exactly the
 * revision it was accepted under however the flow changes afterwards.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("flows")
    .addColumn("id", "uuid", (c) => c.primaryKey())
    .addColumn("account_id", "text", (c) => c.notNull().references("accounts.id").onDelete("cascade"))
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("description", "text", (c) => c.notNull())
    .addColumn("active", "boolean", (c) => c.notNull())
    // The trigger as saved, without its signing secret.
    .addColumn("trigger", "jsonb", (c) => c.notNull())
    // The signing secret, sealed (write-only: never returned).
    .addColumn("signing_secret", "text")
    // The capability to start the flow from outside: random, unique, replaced on regeneration.
    .addColumn("webhook_id", "text", (c) => c.notNull().unique())
    .addColumn("revision", "integer", (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("modified_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("deleted_at", "timestamptz")
    .execute();
  await db.schema
    .createIndex("flows_account_created")
    .on("flows")
    .columns(["account_id", "created_at", "id"])
    .where(sql.ref("deleted_at"), "is", null)
    .execute();

  await db.schema
    .createTable("flow_revisions")
    .addColumn("flow_id", "uuid", (c) => c.notNull().references("flows.id").onDelete("cascade"))
    .addColumn("revision", "integer", (c) => c.notNull())
    // The trigger and the steps as they run: node references resolved into inline steps.
    .addColumn("trigger", "jsonb", (c) => c.notNull())
    .addColumn("steps", "jsonb", (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint("flow_revisions_pk", ["flow_id", "revision"])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("flow_revisions").ifExists().execute();
  await db.schema.dropTable("flows").ifExists().execute();
}
