import { type Kysely, sql } from "kysely";

/**
 * The steps of a flow as its owner wrote them (node references kept as `nodes.<id>`), so
 * that reading a flow answers what was saved. What runs is the resolved copy in
 * `flow_revisions.steps`.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable("flows")
    .addColumn("steps", "jsonb", (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("flows").dropColumn("steps").execute();
}
