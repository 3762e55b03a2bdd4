import type { Kysely } from "kysely";
import { type MigrationResultSet, Migrator } from "kysely/migration";
import { migrations } from "./migrations/index.ts";
import type { Database } from "./schema.ts";

/**
 * Brings the schema up to date. Kysely's Postgres adapter holds a session-level
 * `pg_advisory_lock` for the whole run, so processes starting together migrate once:
 * the second waits, then finds nothing left to do. (PGlite has one connection and
 * needs no lock.)
 */
export async function migrateToLatest(db: Kysely<Database>): Promise<string[]> {
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } });
  const { error, results }: MigrationResultSet = await migrator.migrateToLatest();
  if (error) {
    const reason = error instanceof Error ? error.message : String(error);
    const failed = results?.find((r) => r.status === "Error")?.migrationName;
    throw new Error(failed ? `migration ${failed} failed: ${reason}` : `cannot migrate the database: ${reason}`);
  }
  return (results ?? []).filter((r) => r.status === "Success").map((r) => r.migrationName);
}
