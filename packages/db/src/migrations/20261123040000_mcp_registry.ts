import { type Kysely, sql } from "kysely";

/**
 * The local mirror of the public MCP server registry: one row per server version the
 * upstream lists (deleted ones removed), shared by every account, and the state of the
 * sync that keeps it current (one row), persisted page by page so an interrupted sync
 * resumes where it stopped.
 */
export async function up(db: Kysely<any>): Promise<void> {
  // Trigram indexes for substring search; a contrib module of PostgreSQL, loaded into PGlite.
  await sql`create extension if not exists pg_trgm`.execute(db);

  await db.schema
    .createTable("mcp_registry_servers")
    // Byte order ("C"), the same on every server and in PGlite, for stable keyset paging.
    .addColumn("name", sql`text collate "C"`, (c) => c.notNull())
    .addColumn("version", sql`text collate "C"`, (c) => c.notNull())
    .addColumn("status", "text", (c) => c.notNull())
    .addColumn("is_latest", "boolean", (c) => c.notNull())
    .addColumn("published_at", "timestamptz")
    .addColumn("updated_at", "timestamptz", (c) => c.notNull())
    // The name in lower case, and the name and description in lower case: what search matches.
    .addColumn("name_search", "text", (c) => c.notNull())
    .addColumn("search_text", "text", (c) => c.notNull())
    // The entry as the API answers it: the server.json fields plus `_meta` (json: kept as written, in its order).
    .addColumn("entry", "json", (c) => c.notNull())
    // The full sync that last listed this row; a full sync removes the rows it did not list.
    .addColumn("seen_pass", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("mcp_registry_servers_pkey", ["name", "version"])
    .execute();
  // No pending list (fastupdate): PGlite has no autovacuum to merge it, and searches would scan it.
  await sql`create index mcp_registry_servers_search on mcp_registry_servers
    using gin (search_text gin_trgm_ops) with (fastupdate = off)`.execute(db);
  await db.schema
    .createIndex("mcp_registry_servers_latest")
    .on("mcp_registry_servers")
    .columns(["name", "version"])
    .where(sql.ref("is_latest"), "=", true)
    .execute();
  await db.schema
    .createIndex("mcp_registry_servers_updated")
    .on("mcp_registry_servers")
    .columns(["updated_at"])
    .execute();

  await db.schema
    .createTable("mcp_registry_sync")
    .addColumn("id", "integer", (c) => c.primaryKey().check(sql`id = 1`))
    // The upstream the mirror was filled from; another one starts over with a full sync.
    .addColumn("upstream", "text")
    // Bumped by every change to the mirror's rows; answers cached in a process are keyed by it.
    .addColumn("generation", "bigint", (c) => c.notNull().defaultTo(0))
    .addColumn("completed_at", "timestamptz")
    // `updated_since` of the next incremental sync.
    .addColumn("watermark", "timestamptz")
    .addColumn("pass", "bigint", (c) => c.notNull().defaultTo(0))
    // The sync under way (null: none): its kind, its `updated_since`, the upstream cursor
    // after its last written page, the upstream's clock at its start, the newest updatedAt seen.
    .addColumn("run_kind", "text")
    .addColumn("run_since", "timestamptz")
    .addColumn("run_cursor", "text")
    .addColumn("run_pages", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("run_started_at", "timestamptz")
    .addColumn("run_max_updated", "timestamptz")
    // The process running it, until when (renewed with each page).
    .addColumn("lease_owner", "text")
    .addColumn("lease_until", "timestamptz")
    .execute();
  await db.insertInto("mcp_registry_sync").values({ id: 1 }).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("mcp_registry_sync").ifExists().execute();
  await db.schema.dropTable("mcp_registry_servers").ifExists().execute();
}
