/**
 * `bun packages/db/src/cli.ts migrate`: applies pending migrations to DATABASE_URL
 * (or to the PGlite data directory DATA_DIR when DATABASE_URL is unset) and prints
 * the names it applied as JSON.
 */
import { z } from "zod";
import { openDatabase } from "./connection.ts";
import { migrateToLatest } from "./migrator.ts";

const env = z
  .object({ DATABASE_URL: z.url().optional(), DATA_DIR: z.string().min(1).default("./data") })
  .safeParse(process.env);
if (!env.success) {
  console.error(`invalid configuration: ${env.error.issues.map((i) => i.path.join(".")).join(", ")}`);
  process.exit(2);
}
const [command] = process.argv.slice(2);
if (command !== "migrate") {
  console.error("usage: bun packages/db/src/cli.ts migrate");
  process.exit(2);
}
const { DATABASE_URL, DATA_DIR } = env.data;
const handle = await openDatabase(
  DATABASE_URL ? { kind: "postgres", url: DATABASE_URL, poolSize: 1 } : { kind: "pglite", dataDir: DATA_DIR },
);
try {
  console.log(JSON.stringify({ applied: await migrateToLatest(handle.db) }));
} catch (error) {
  console.error(error instanceof Error ? error.message : String(error));
  process.exitCode = 1;
} finally {
  await handle.close();
}
