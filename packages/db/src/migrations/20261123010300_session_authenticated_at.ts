import { type Kysely, sql } from "kysely";

/**
 * When the user of a sign-in session last proved who they are (password or second factor):
 * set at sign-in, renewed by `POST /accounts/reauthenticate`, kept across refreshes.
 * Changing second factors needs it to be recent.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable("auth_sessions")
    .addColumn("authenticated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("auth_sessions").dropColumn("authenticated_at").execute();
}
