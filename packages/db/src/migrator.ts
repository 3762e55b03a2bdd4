import { type Kysely, sql } from "kysely";
import { type MigrationResultSet, Migrator } from "kysely/migration";
import { migrations } from "./migrations/index.ts";
import type { Database } from "./schema.ts";

/** The session advisory lock held while one process migrates (Kysely takes its own, another id, around each step). */
const MIGRATING_LOCK = 7_190_451_332;

/**
 * Brings the schema up to date, one migration per transaction: a lock a migration takes is
 * let go when it commits, not when the last pending one does. Partitioning runs relies on
 * it (20261127020000 to 20261127020400): a moment's exclusive lock, then a long validation
 * under a lock that lets writes go on, then a moment's swap, each committed before the next.
 * The whole run holds a session-level `pg_advisory_lock` on one connection, so processes
 * starting together migrate once: the second waits, then finds nothing left to do. (Kysely's
 * own lock is let go between steps, and processes taking turns step by step once applied a
 * migration twice in CI.)
 */
export async function migrateToLatest(db: Kysely<Database>): Promise<string[]> {
  try {
    return await db.connection().execute(migrateHoldingLock);
  } catch (error) {
    // A migration's own failure names it; anything else (the server out of reach) says what stopped the run.
    if (error instanceof MigrationFailed) throw error;
    throw new Error(`cannot migrate the database: ${reasonOf(error)}`, { cause: error });
  }
}

class MigrationFailed extends Error {}

const reasonOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

async function migrateHoldingLock(connection: Kysely<Database>): Promise<string[]> {
  await sql`select pg_advisory_lock(${MIGRATING_LOCK})`.execute(connection);
  try {
    const migrator = new Migrator({ db: connection, provider: { getMigrations: async () => migrations } });
    const applied: string[] = [];
    for (;;) {
      const { error, results }: MigrationResultSet = await migrator.migrateUp();
      if (error) {
        const failed = results?.find((r) => r.status === "Error")?.migrationName;
        if (!failed) throw error;
        throw new MigrationFailed(`migration ${failed} failed: ${reasonOf(error)}`, { cause: error });
      }
      const done = (results ?? []).filter((r) => r.status === "Success").map((r) => r.migrationName);
      if (done.length === 0) return applied;
      applied.push(...done);
    }
  } finally {
    await sql`select pg_advisory_unlock(${MIGRATING_LOCK})`.execute(connection);
  }
}
