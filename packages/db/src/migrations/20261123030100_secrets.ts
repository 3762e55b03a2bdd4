import { type Kysely, sql } from "kysely";

/**
 * The secrets bucket of each account: one sealed value per key (AES-256-GCM, the
 * plaintext never stored), named by a key unique within the account.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("secrets")
    .addColumn("account_id", "text", (c) => c.notNull().references("accounts.id").onDelete("cascade"))
    .addColumn("key", "text", (c) => c.notNull())
    // `v2.<key id>.<iv>.<ciphertext+tag>`, bound to account and key as associated data.
    .addColumn("value", "text", (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint("secrets_pkey", ["account_id", "key"])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("secrets").ifExists().execute();
}
