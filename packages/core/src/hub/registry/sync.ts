import { randomUUID } from "node:crypto";
import type { Database } from "@platform/db";
import { type Kysely, sql } from "kysely";
import { messageOf } from "../../errors.ts";
import type { Logger } from "../../logger.ts";
import { acquireLease, holdLease, releaseLease, type SyncState, sweepUnlisted, writeEntries } from "./mirror.ts";
import { fetchUpstreamPage, UpstreamError, type UpstreamOptions } from "./upstream.ts";

/** An incremental sync asks again for what changed this long before its watermark (clock skew, late writes). */
const OVERLAP_MS = 60_000;

export interface RegistrySyncDeps {
  db: Kysely<Database>;
  logger: Logger;
  upstream: UpstreamOptions;
  /** How long a sync may go without writing a page before another process may take it over (default 60 s). */
  leaseMs?: number;
  /** Entries asked for per upstream page (default 100, the upstream's maximum). */
  pageSize?: number;
  /** Called once a change to the mirror is committed: rows written, or a sync completed. */
  onChange?: () => Promise<void>;
}

export interface SyncReport {
  kind: "full" | "incremental";
  /** Whether it went on from where an interrupted sync stopped. */
  resumed: boolean;
  pages: number;
  /** Rows inserted, updated or removed. */
  changed: number;
}

export interface RegistrySync {
  /**
   * Runs a sync, or resumes the one interrupted: full until one has completed from this
   * upstream, incremental (`updated_since`) after. A call while one runs in this process
   * joins it; "busy" when another process is running one. Throws UpstreamError.
   */
  run(signal?: AbortSignal): Promise<SyncReport | "busy">;
  /** Whether a sync should run: none completed from this upstream, one was interrupted, or the last is `intervalMs` old. */
  due(intervalMs: number): Promise<boolean>;
}

export function createRegistrySync(deps: RegistrySyncDeps): RegistrySync {
  const owner = randomUUID();
  const leaseMs = deps.leaseMs ?? 60_000;
  const pageSize = deps.pageSize ?? 100;
  let current: Promise<SyncReport | "busy"> | undefined;

  const announce = () => deps.onChange?.();

  async function runOnce(signal?: AbortSignal): Promise<SyncReport | "busy"> {
    const state = await acquireLease(deps.db, owner, leaseMs);
    if (!state) return "busy";
    try {
      return await syncHolding(state, signal);
    } catch (error) {
      deps.logger.warn({ err: messageOf(error) }, "registry sync stopped");
      throw error;
    } finally {
      await releaseLease(deps.db, owner).catch((error: unknown) =>
        deps.logger.warn({ err: messageOf(error) }, "registry lease not released"),
      );
    }
  }

  async function syncHolding(state: SyncState, signal?: AbortSignal): Promise<SyncReport> {
    const resumed = state.run_kind !== null && state.upstream === deps.upstream.url;
    const run = resumed ? state : await startRun(state);
    const kind = run.run_kind ?? "full";
    const pass = Number(run.pass);
    let cursor = run.run_cursor ?? undefined;
    let pages = 0;
    let changed = 0;
    for (;;) {
      signal?.throwIfAborted();
      const page = await fetchUpstreamPage(
        deps.upstream,
        { cursor, updatedSince: run.run_since ?? undefined, limit: pageSize },
        signal,
      );
      if (page.nextCursor !== undefined && page.nextCursor === cursor) {
        throw new UpstreamError("the upstream registry answered the same cursor again");
      }
      if (page.skipped > 0) deps.logger.warn({ skipped: page.skipped }, "registry entries that are not server entries");
      const newest = page.entries.reduce<Date | null>(
        (max, e) => (max && max >= e.updatedAt ? max : e.updatedAt),
        null,
      );
      const written = await deps.db.transaction().execute(async (trx) => {
        await holdLease(trx, owner, leaseMs);
        const rows = await writeEntries(trx, page.entries, pass);
        await trx
          .updateTable("mcp_registry_sync")
          .set((eb) => ({
            run_cursor: page.nextCursor ?? null,
            run_pages: eb("run_pages", "+", 1),
            run_started_at: eb.fn.coalesce("run_started_at", sql<Date>`${page.date ?? new Date()}::timestamptz`),
            run_max_updated: newest
              ? sql<Date>`greatest(run_max_updated, ${newest}::timestamptz)`
              : eb.ref("run_max_updated"),
            generation: rows > 0 ? eb("generation", "+", 1) : eb.ref("generation"),
          }))
          .where("id", "=", 1)
          .execute();
        return rows;
      });
      changed += written;
      pages++;
      if (written > 0) await announce();
      if (!page.nextCursor) break;
      cursor = page.nextCursor;
    }
    changed += await finishRun(kind, pass);
    await announce();
    // Fresh statistics at once, so the next searches use the trigram index (autovacuum, or
    // embedded mode's vacuum job, would analyze it only some seconds later).
    if (changed > 0) await sql`analyze mcp_registry_servers`.execute(deps.db);
    const report = { kind, resumed, pages, changed };
    deps.logger.info(report, "registry mirror synced");
    return report;
  }

  /** Records a new run: full (a new pass) when none completed from this upstream, else incremental. */
  async function startRun(state: SyncState): Promise<SyncState> {
    const incremental = state.completed_at !== null && state.upstream === deps.upstream.url && state.watermark;
    const since = incremental && state.watermark ? new Date(state.watermark.getTime() - OVERLAP_MS) : null;
    return deps.db
      .updateTable("mcp_registry_sync")
      .set((eb) => ({
        upstream: deps.upstream.url,
        completed_at: incremental ? eb.ref("completed_at") : null,
        pass: incremental ? eb.ref("pass") : eb("pass", "+", 1),
        run_kind: incremental ? "incremental" : "full",
        run_since: since,
        run_cursor: null,
        run_pages: 0,
        run_started_at: null,
        run_max_updated: null,
      }))
      .where("id", "=", 1)
      .where("lease_owner", "=", owner)
      .returningAll()
      .executeTakeFirstOrThrow();
  }

  /**
   * Ends the run: a full one removes what it did not list. The next incremental sync asks
   * from the newest change seen, or the run's start if that is earlier (a change made
   * behind the cursor while paging is then still asked for).
   */
  async function finishRun(kind: "full" | "incremental", pass: number): Promise<number> {
    return deps.db.transaction().execute(async (trx) => {
      await holdLease(trx, owner, leaseMs);
      const removed = kind === "full" ? await sweepUnlisted(trx, pass) : 0;
      await trx
        .updateTable("mcp_registry_sync")
        .set((eb) => ({
          completed_at: sql<Date>`now()`,
          watermark: sql<Date>`greatest(${kind === "incremental" ? eb.ref("watermark") : null},
            least(coalesce(run_max_updated, run_started_at), run_started_at))`,
          generation: removed > 0 ? eb("generation", "+", 1) : eb.ref("generation"),
          run_kind: null,
          run_since: null,
          run_cursor: null,
          run_started_at: null,
          run_max_updated: null,
        }))
        .where("id", "=", 1)
        .execute();
      return removed;
    });
  }

  return {
    run(signal) {
      current ??= runOnce(signal).finally(() => {
        current = undefined;
      });
      return current;
    },
    async due(intervalMs) {
      const row = await deps.db
        .selectFrom("mcp_registry_sync")
        .select(
          sql<boolean>`completed_at is null or upstream is distinct from ${deps.upstream.url} or run_kind is not null
            or completed_at <= now() - ${intervalMs} * interval '1 millisecond'`.as("due"),
        )
        .where("id", "=", 1)
        .executeTakeFirstOrThrow();
      return row.due;
    },
  };
}
