import { type Kysely, sql } from "kysely";

/**
 * Credentials and second factors: sign-in sessions (refresh-token families), their
 * refresh tokens, pending MFA logins, TOTP, passkeys and API keys. Every secret a
 * client holds (refresh token, MFA token, API key) is stored only as its SHA-256 hash.
 */
export async function up(db: Kysely<any>): Promise<void> {
  // One row per sign-in: a refresh-token family. Access tokens name it (`sid`), so
  // revoking it ends the access tokens of that sign-in as well.
  await db.schema
    .createTable("auth_sessions")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("account_id", "text", (c) => c.notNull().references("accounts.id").onDelete("cascade"))
    .addColumn("user_id", "text", (c) => c.notNull().references("users.id").onDelete("cascade"))
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("revoked_at", "timestamptz")
    .execute();
  await db.schema.createIndex("auth_sessions_member").on("auth_sessions").columns(["account_id", "user_id"]).execute();

  // A rotated token keeps its row (with `rotated_at`) until it expires, so its reuse is recognised.
  await db.schema
    .createTable("refresh_tokens")
    .addColumn("token_hash", "text", (c) => c.primaryKey())
    .addColumn("session_id", "text", (c) => c.notNull().references("auth_sessions.id").onDelete("cascade"))
    .addColumn("account_id", "text", (c) => c.notNull().references("accounts.id").onDelete("cascade"))
    .addColumn("user_id", "text", (c) => c.notNull().references("users.id").onDelete("cascade"))
    .addColumn("expires_at", "timestamptz", (c) => c.notNull())
    .addColumn("rotated_at", "timestamptz")
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex("refresh_tokens_session").on("refresh_tokens").column("session_id").execute();
  await db.schema
    .createIndex("refresh_tokens_user_expiry")
    .on("refresh_tokens")
    .columns(["user_id", "expires_at"])
    .execute();

  // A password login waiting for its second factor.
  await db.schema
    .createTable("mfa_challenges")
    .addColumn("token_hash", "text", (c) => c.primaryKey())
    .addColumn("account_id", "text", (c) => c.notNull().references("accounts.id").onDelete("cascade"))
    .addColumn("user_id", "text", (c) => c.notNull().references("users.id").onDelete("cascade"))
    .addColumn("webauthn_challenge", "text")
    .addColumn("expires_at", "timestamptz", (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex("mfa_challenges_user").on("mfa_challenges").column("user_id").execute();

  // TOTP of a user: pending until `enabled_at` is set; `last_used_step` makes each code single-use.
  await db.schema
    .createTable("user_totp")
    .addColumn("user_id", "text", (c) => c.primaryKey().references("users.id").onDelete("cascade"))
    .addColumn("secret", "text", (c) => c.notNull())
    .addColumn("enabled_at", "timestamptz")
    .addColumn("last_used_step", "bigint")
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  await db.schema
    .createTable("passkeys")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("user_id", "text", (c) => c.notNull().references("users.id").onDelete("cascade"))
    .addColumn("public_key", "text", (c) => c.notNull())
    .addColumn("counter", "bigint", (c) => c.notNull().defaultTo(0))
    .addColumn("transports", "jsonb", (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn("device_type", "text", (c) => c.notNull())
    .addColumn("backed_up", "boolean", (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("last_used_at", "timestamptz")
    .execute();
  await db.schema.createIndex("passkeys_user").on("passkeys").column("user_id").execute();

  // The challenge of a passkey registration in progress, one per user.
  await db.schema
    .createTable("passkey_registrations")
    .addColumn("user_id", "text", (c) => c.primaryKey().references("users.id").onDelete("cascade"))
    .addColumn("challenge", "text", (c) => c.notNull())
    .addColumn("expires_at", "timestamptz", (c) => c.notNull())
    .execute();

  // `allowed_paths` null = unrestricted. A key acts as its creator, with the creator's current role.
  await db.schema
    .createTable("api_keys")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("account_id", "text", (c) => c.notNull().references("accounts.id").onDelete("cascade"))
    .addColumn("created_by", "text", (c) => c.notNull().references("users.id").onDelete("cascade"))
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("prefix", "text", (c) => c.notNull())
    .addColumn("key_hash", "text", (c) => c.notNull().unique())
    .addColumn("allowed_paths", "jsonb")
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex("api_keys_account").on("api_keys").columns(["account_id", "created_at"]).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of [
    "api_keys",
    "passkey_registrations",
    "passkeys",
    "user_totp",
    "mfa_challenges",
    "refresh_tokens",
    "auth_sessions",
  ]) {
    await db.schema.dropTable(table).ifExists().execute();
  }
}
