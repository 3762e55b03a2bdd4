import { randomBytes } from "node:crypto";
import { readdir } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { Kysely } from "kysely";
import pg from "pg";
import { z } from "zod";
import { type DatabaseHandle, openDatabase, pgliteExtensions } from "./connection.ts";
import { migrateToLatest } from "./migrator.ts";
import { PGBOUNCER, type RunningPgBouncer, startPgBouncer } from "./pgbouncer.ts";
import { pgliteDialect } from "./pglite-statements.ts";
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
    const db = new Kysely<Database>({ dialect: pgliteDialect(pglite) });
    await migrateToLatest(db);
    const image = await pglite.dumpDataDir("none");
    await db.destroy();
    return image;
  })();
  return migratedPglite;
}

/** Runs `work` on a connection to the test server's `DATABASE_URL` database. */
async function onTestServer<T>(work: (admin: pg.Client) => Promise<T>): Promise<T> {
  const adminUrl = testEnv.DATABASE_URL;
  if (!adminUrl) throw new Error("DATABASE_URL is not set");
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    return await work(admin);
  } finally {
    await admin.end();
  }
}

/** The URL of database `name` on the test server. */
function testServerUrl(name: string): string {
  const url = new URL(testEnv.DATABASE_URL ?? "");
  url.pathname = `/${name}`;
  return url.toString();
}

let migratedTemplate: Promise<string> | undefined;

/**
 * The name of a migrated database on the test server that scratch databases are copied from
 * (`CREATE DATABASE … TEMPLATE`: a file copy, where migrating each one took seconds). Its name
 * holds today's date (a migration bounds the runs' first partition a week from the day it ran)
 * and a digest of the migrations' sources, so a new day or an edited migration makes a new one; it is
 * migrated under a name of its own and renamed once complete, so test processes starting at
 * once each find either none (and build one; the first rename wins) or a finished one.
 */
function migratedTemplateName(): Promise<string> {
  migratedTemplate ??= (async () => {
    const folder = join(import.meta.dir, "migrations");
    const files = (await readdir(folder)).sort();
    const sources = await Promise.all(files.map((file) => Bun.file(join(folder, file)).text()));
    const day = new Date().toISOString().slice(0, 10).replaceAll("-", "");
    const digest = new Bun.CryptoHasher("sha256").update(sources.join("\n")).digest("hex").slice(0, 16);
    const name = `platform_template_${day}_${digest}`;
    const exists = await onTestServer((admin) => admin.query("SELECT 1 FROM pg_database WHERE datname = $1", [name]));
    if (exists.rowCount) return name;
    const building = `${name}_${randomBytes(4).toString("hex")}`;
    await onTestServer((admin) => admin.query(`CREATE DATABASE ${building}`));
    const handle = await openDatabase({ kind: "postgres", url: testServerUrl(building), poolSize: 1 });
    await migrateToLatest(handle.db).finally(() => handle.close());
    await onTestServer(async (admin) => {
      try {
        await admin.query(`ALTER DATABASE ${building} RENAME TO ${name}`);
      } catch {
        // Another process finished one first: its copy serves.
        await admin.query(`DROP DATABASE IF EXISTS ${building} WITH (FORCE)`);
      }
      // Templates of days before yesterday go (one still being copied from stays). Today's others
      // may serve processes testing other sources (another worktree's), and yesterday's a run
      // that began before midnight.
      const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10).replaceAll("-", "");
      const { rows } = await admin.query<{ datname: string }>(
        "SELECT datname FROM pg_database WHERE datname ~ '^platform_template_[0-9]{8}_' AND datname NOT LIKE $1 AND datname NOT LIKE $2",
        [`platform_template_${day}_%`, `platform_template_${yesterday}_%`],
      );
      for (const { datname } of rows) await admin.query(`DROP DATABASE IF EXISTS ${datname}`).catch(() => {});
    });
    return name;
  })();
  return migratedTemplate;
}

/**
 * Creates a database on the test server, empty or (`migrated`) at the latest migration, and
 * returns its URL and a way to drop it.
 */
export async function createScratchPostgres(
  options: { migrated?: boolean } = {},
): Promise<{ url: string; drop(): Promise<void> }> {
  const template = options.migrated ? await migratedTemplateName() : undefined;
  const name = `scratch_${randomBytes(6).toString("hex")}`;
  await onTestServer((admin) => admin.query(`CREATE DATABASE ${name}${template ? ` TEMPLATE ${template}` : ""}`));
  return {
    url: testServerUrl(name),
    async drop() {
      await onTestServer((admin) => admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    },
  };
}

/** A fresh, migrated database of its own for one test file; closing it throws it away. */
export async function openTestDatabase(backend: TestBackend): Promise<DatabaseHandle> {
  if (backend === "pglite") return openDatabase({ kind: "pglite", loadFrom: await migratedPgliteImage() });
  const scratch = await createScratchPostgres({ migrated: true });
  let handle: DatabaseHandle;
  let bouncer: RunningPgBouncer | undefined;
  if (backend === "pgbouncer") {
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
