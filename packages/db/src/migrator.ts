import { type DatabaseIntrospector, type Kysely, sql, type TableMetadata } from "kysely";
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
    const migrator = new Migrator({
      db: withTableNamesOnly(connection),
      provider: { getMigrations: async () => migrations },
    });
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

/**
 * `db` as Kysely's Migrator is given it: its introspection lists tables by name, without
 * their columns. The Migrator introspects twice a step (`migrateUp`) only to learn whether
 * its own two tables exist, and Kysely's introspection reads every column of every table and
 * day partition: in PGlite 34 ms a call, 106 calls as a fresh database takes its 52 steps
 * and finds none left. A fresh embedded start took 9.3–10.2 s and takes 6.4, a restart 2.1
 * and 1.9. The Migrator reads nothing else of it. Every other property is `db`'s own, its
 * methods bound to it (Kysely keeps its state in private fields, which a method called on
 * the proxy could not reach).
 */
function withTableNamesOnly(db: Kysely<Database>): Kysely<Database> {
  const introspection: DatabaseIntrospector = {
    getSchemas: () => db.introspection.getSchemas(),
    async getTables() {
      const { rows } = await sql<{ schema: string; name: string }>`
        select schemaname as schema, tablename as name from pg_catalog.pg_tables
        where schemaname not in ('pg_catalog', 'information_schema')`.execute(db);
      return rows.map((row): TableMetadata => ({ ...row, isView: false, isForeign: false, columns: [] }));
    },
  };
  return new Proxy(db, {
    get(target, key) {
      if (key === "introspection") return introspection;
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
