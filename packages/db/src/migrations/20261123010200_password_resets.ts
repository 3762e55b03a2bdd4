import { type Kysely, sql } from "kysely";

/**
 * Password resets: a single-use link mailed to the user (or printed for the operator by
 * `bun run accounts:reset-link`). The token is stored as its SHA-256 hash; a user has at
 * most one live reset (a new one replaces it). Expired rows are left for housekeeping.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("password_resets")
    .addColumn("token_hash", "text", (c) => c.primaryKey())
    .addColumn("user_id", "text", (c) => c.notNull().references("users.id").onDelete("cascade"))
    .addColumn("expires_at", "timestamptz", (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex("password_resets_user").on("password_resets").column("user_id").execute();
  await db.schema.createIndex("password_resets_expiry").on("password_resets").column("expires_at").execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("password_resets").ifExists().execute();
}
