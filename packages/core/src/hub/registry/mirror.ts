import type { Database } from "@platform/db";
import { type Kysely, sql, type Transaction } from "kysely";
import { type MirrorEntry, OFFICIAL_META } from "./upstream.ts";

type Db = Kysely<Database> | Transaction<Database>;

/** The mirror's sync state (the one row of `mcp_registry_sync`). */
export async function readSyncState(db: Db) {
  return db.selectFrom("mcp_registry_sync").selectAll().where("id", "=", 1).executeTakeFirstOrThrow();
}

export type SyncState = Awaited<ReturnType<typeof readSyncState>>;

/** What the endpoint needs to know per request: whether a sync from `upstream` completed, and the generation. */
export async function readMirrorVersion(db: Db) {
  return db
    .selectFrom("mcp_registry_sync")
    .select(["upstream", "completed_at", "generation"])
    .where("id", "=", 1)
    .executeTakeFirstOrThrow();
}

const leaseExpiry = (leaseMs: number) => sql<Date>`now() + ${leaseMs} * interval '1 millisecond'`;

/** Takes (or renews) the lease on syncing for `owner`; undefined while another process holds it. */
export async function acquireLease(db: Db, owner: string, leaseMs: number): Promise<SyncState | undefined> {
  return db
    .updateTable("mcp_registry_sync")
    .set({ lease_owner: owner, lease_until: leaseExpiry(leaseMs) })
    .where("id", "=", 1)
    .where((eb) =>
      eb.or([eb("lease_owner", "is", null), eb("lease_owner", "=", owner), eb("lease_until", "<", sql<Date>`now()`)]),
    )
    .returningAll()
    .executeTakeFirst();
}

export async function releaseLease(db: Db, owner: string): Promise<void> {
  await db
    .updateTable("mcp_registry_sync")
    .set({ lease_owner: null, lease_until: null })
    .where("id", "=", 1)
    .where("lease_owner", "=", owner)
    .execute();
}

/** Another process took the lease (this one stalled past it); its writes are rolled back. */
export class LeaseLost extends Error {
  override name = "LeaseLost";
}

/** Locks the state row in `trx` and renews the lease; throws LeaseLost when `owner` no longer holds it. */
export async function holdLease(trx: Transaction<Database>, owner: string, leaseMs: number): Promise<void> {
  const held = await trx
    .updateTable("mcp_registry_sync")
    .set({ lease_until: leaseExpiry(leaseMs) })
    .where("id", "=", 1)
    .where("lease_owner", "=", owner)
    .returning("id")
    .executeTakeFirst();
  if (!held) throw new LeaseLost("another process took over the registry sync");
}

/**
 * Writes a page of upstream entries: deleted ones are removed, the others inserted or
 * updated (marked as listed by full sync `pass`), and a new latest version makes the
 * name's other versions not latest. Returns how many rows changed.
 */
export async function writeEntries(trx: Transaction<Database>, entries: MirrorEntry[], pass: number): Promise<number> {
  const byKey = new Map(entries.map((e) => [`${e.name}\u0000${e.version}`, e]));
  const unique = [...byKey.values()];
  const deleted = unique.filter((e) => e.status === "deleted");
  const kept = unique.filter((e) => e.status !== "deleted");
  let changed = 0;
  if (deleted.length > 0) {
    const removed = await trx
      .deleteFrom("mcp_registry_servers")
      .where((eb) =>
        eb(
          eb.refTuple("name", "version"),
          "in",
          deleted.map((e) => eb.tuple(e.name, e.version)),
        ),
      )
      .executeTakeFirst();
    changed += Number(removed.numDeletedRows);
  }
  if (kept.length > 0) {
    const written = await trx
      .insertInto("mcp_registry_servers")
      .values(
        kept.map((e) => ({
          name: e.name,
          version: e.version,
          status: e.status,
          is_latest: e.isLatest,
          published_at: e.publishedAt,
          updated_at: e.updatedAt,
          name_search: e.name.toLowerCase(),
          search_text: `${e.name}\n${String(e.entry.description ?? "")}`.toLowerCase(),
          entry: JSON.stringify(e.entry),
          seen_pass: pass,
        })),
      )
      .onConflict((oc) =>
        oc
          .columns(["name", "version"])
          .doUpdateSet((eb) => ({
            status: eb.ref("excluded.status"),
            is_latest: eb.ref("excluded.is_latest"),
            published_at: eb.ref("excluded.published_at"),
            updated_at: eb.ref("excluded.updated_at"),
            name_search: eb.ref("excluded.name_search"),
            search_text: eb.ref("excluded.search_text"),
            entry: eb.ref("excluded.entry"),
            seen_pass: eb.ref("excluded.seen_pass"),
          }))
          // Entries listed again unchanged (an incremental sync's overlap) write nothing.
          .where(
            sql<boolean>`(mcp_registry_servers.entry::text, mcp_registry_servers.updated_at, mcp_registry_servers.seen_pass)
              is distinct from (excluded.entry::text, excluded.updated_at, excluded.seen_pass)`,
          ),
      )
      .executeTakeFirst();
    changed += Number(written.numInsertedOrUpdatedRows ?? 0);
    changed += await supersede(
      trx,
      kept.filter((e) => e.isLatest),
    );
  }
  return changed;
}

/** Versions that are no longer the latest of their name, now that `latest` are. Returns how many changed. */
async function supersede(trx: Transaction<Database>, latest: MirrorEntry[]): Promise<number> {
  if (latest.length === 0) return 0;
  const rows = await trx
    .selectFrom("mcp_registry_servers")
    .select(["name", "version", "entry"])
    .where("is_latest", "=", true)
    .where(
      "name",
      "in",
      latest.map((e) => e.name),
    )
    .where((eb) =>
      eb.not(
        eb(
          eb.refTuple("name", "version"),
          "in",
          latest.map((e) => eb.tuple(e.name, e.version)),
        ),
      ),
    )
    .execute();
  for (const row of rows) {
    const official = row.entry._meta?.[OFFICIAL_META];
    if (official) official.isLatest = false;
    await trx
      .updateTable("mcp_registry_servers")
      .set({ is_latest: false, entry: JSON.stringify(row.entry) })
      .where("name", "=", row.name)
      .where("version", "=", row.version)
      .execute();
  }
  return rows.length;
}

/** After a full sync: removes the rows it did not list (gone upstream). Returns how many. */
export async function sweepUnlisted(trx: Transaction<Database>, pass: number): Promise<number> {
  const removed = await trx.deleteFrom("mcp_registry_servers").where("seen_pass", "<>", pass).executeTakeFirst();
  return Number(removed.numDeletedRows);
}
