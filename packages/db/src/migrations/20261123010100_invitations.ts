import { type Kysely, sql } from "kysely";

/**
 * Invitations: a user joins an account only by accepting one (a new email sets its
 * password, an existing user proves theirs). The token is stored as its SHA-256 hash.
 * One pending invitation per email and account; accepting or revoking deletes it, and
 * expired ones are left for housekeeping (`expires_at`).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("invitations")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("account_id", "text", (c) => c.notNull().references("accounts.id").onDelete("cascade"))
    .addColumn("email", "text", (c) => c.notNull())
    .addColumn("role", "text", (c) => c.notNull())
    .addColumn("token_hash", "text", (c) => c.notNull().unique())
    .addColumn("invited_by", "text", (c) => c.references("users.id").onDelete("set null"))
    .addColumn("expires_at", "timestamptz", (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint("invitations_account_email", ["account_id", "email"])
    .execute();
  await db.schema.createIndex("invitations_expiry").on("invitations").column("expires_at").execute();

  // A sign-in through an invitation by a user with a second factor: the invitation is
  // accepted when the second factor is.
  await db.schema
    .alterTable("mfa_challenges")
    .addColumn("invitation_id", "text", (c) => c.references("invitations.id").onDelete("cascade"))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("mfa_challenges").dropColumn("invitation_id").execute();
  await db.schema.dropTable("invitations").ifExists().execute();
}
