import { randomBytes } from "node:crypto";
import { createServer } from "node:net";
import { PGlite } from "@electric-sql/pglite";
import { Kysely, PGliteDialect } from "kysely";
import pg from "pg";
import { z } from "zod";
import { type DatabaseHandle, openDatabase, pgliteExtensions } from "./connection.ts";
import { migrateToLatest } from "./migrator.ts";
import { PGBOUNCER, type RunningPgBouncer, startPgBouncer } from "./pgbouncer.ts";
import type { Database } from "./schema.ts";

/**
 * The test suites' only view of the environment. PostgreSQL and Redis suites run
 * when these are set (CI sets both) and announce that they were skipped otherwise.
 */
const unsetWhenEmpty = (value: unknown) => (value === "" ? undefined : value);
export const testEnv = z
  .object({
    DATABASE_URL: z.preprocess(unsetWhenEmpty, z.url().optional()),
    REDIS_URL: z.preprocess(unsetWhenEmpty, z.url().optional()),
  })
  .parse(process.env);

/** `pgbouncer`: PostgreSQL through a transaction-pooling PgBouncer (migrations and LISTEN straight to the server). */
export type TestBackend = "pglite" | "postgres" | "pgbouncer";

/** The database backends this run can test against, with a reason for each one left out. */
export function databaseBackends(): { backend: TestBackend; skip: string | false }[] {
  return [
    { backend: "pglite", skip: false },
    { backend: "postgres", skip: testEnv.DATABASE_URL ? false : "DATABASE_URL is not set" },
  ];
}

let migratedPglite: Promise<Blob> | undefined;

/** A migrated PGlite image, built once per test process (PGlite takes seconds to initialise). */
function migratedPgliteImage(): Promise<Blob> {
  migratedPglite ??= (async () => {
    const pglite = await PGlite.create({ extensions: pgliteExtensions });
    const db = new Kysely<Database>({ dialect: new PGliteDialect({ pglite }) });
    await migrateToLatest(db);
    const image = await pglite.dumpDataDir("none");
    await db.destroy();
    return image;
  })();
  return migratedPglite;
}

/** Creates an empty database on the test server and returns its URL and a way to drop it. */
export async function createScratchPostgres(): Promise<{ url: string; drop(): Promise<void> }> {
  const adminUrl = testEnv.DATABASE_URL;
  if (!adminUrl) throw new Error("DATABASE_URL is not set");
  const name = `scratch_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}

/** A fresh, migrated database of its own for one test file; closing it throws it away. */
export async function openTestDatabase(backend: TestBackend): Promise<DatabaseHandle> {
  if (backend === "pglite") return openDatabase({ kind: "pglite", loadFrom: await migratedPgliteImage() });
  const scratch = await createScratchPostgres();
  let handle: DatabaseHandle;
  let bouncer: RunningPgBouncer | undefined;
  if (backend === "pgbouncer") {
    // Migrated straight on the server, as the platform does with DATABASE_DIRECT_URL.
    const direct = await openDatabase({ kind: "postgres", url: scratch.url, poolSize: 1 });
    await migrateToLatest(direct.db).finally(() => direct.close());
    // A pooler of its own, which goes with the database.
    bouncer = await startPgBouncer(scratch.url, await freeLoopbackPort());
    handle = await openDatabase({
      kind: "postgres",
      url: bouncer.through(scratch.url),
      poolSize: 5,
      directUrl: scratch.url,
    });
  } else {
    handle = await openDatabase({ kind: "postgres", url: scratch.url, poolSize: 5 });
    await migrateToLatest(handle.db);
  }
  return {
    ...handle,
    async close() {
      await handle.close();
      await bouncer?.stop();
      await scratch.drop();
    },
  };
}

/** Why the PgBouncer suites cannot run here, or false. */
export async function pgBouncerMissing(): Promise<string | false> {
  if (!testEnv.DATABASE_URL) return "DATABASE_URL is not set";
  return (await Bun.file(PGBOUNCER).exists()) ? false : "pgbouncer is not installed (apt-get install -y pgbouncer)";
}

/** A loopback TCP port nothing listens on at the time of the call. */
export function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() =>
        typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port")),
      );
    });
  });
}
