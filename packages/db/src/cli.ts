/**
 * `bun packages/db/src/cli.ts migrate`: applies pending migrations to DATABASE_DIRECT_URL,
 * else DATABASE_URL (or to the PGlite data directory DATA_DIR when both are unset), and
 * prints the names it applied as JSON. Migrations hold a session lock: never through a pooler.
 */
import { z } from "zod";
import { openDatabase } from "./connection.ts";
import { migrateToLatest } from "./migrator.ts";

const env = z
  .object({
    DATABASE_URL: z.url().optional(),
    DATABASE_DIRECT_URL: z.url().optional(),
    DATA_DIR: z.string().min(1).default("./data"),
  })
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
const { DATA_DIR } = env.data;
const url = env.data.DATABASE_DIRECT_URL ?? env.data.DATABASE_URL;
const handle = await openDatabase(url ? { kind: "postgres", url, poolSize: 1 } : { kind: "pglite", dataDir: DATA_DIR });
try {
  console.log(JSON.stringify({ applied: await migrateToLatest(handle.db) }));
} catch (error) {
  console.error(error instanceof Error ? error.message : String(error));
  process.exitCode = 1;
} finally {
  await handle.close();
}
