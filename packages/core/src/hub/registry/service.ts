import type { Database } from "@platform/db";
import type { Kysely } from "kysely";
import type { Broker } from "../../broker/port.ts";
import type { RegistryConfig } from "../../config.ts";
import { DomainError } from "../../errors.ts";
import type { Logger } from "../../logger.ts";
import { createAnswerCache } from "./cache.ts";
import { readMirrorVersion } from "./mirror.ts";
import { countMatches, decodeCursor, planQuery, readLatestEntry, readPage } from "./query.ts";
import type { RegistryPage, RegistryQuery, RegistryServer } from "./schemas.ts";
import { createRegistrySync, type RegistrySync } from "./sync.ts";
import { UpstreamError } from "./upstream.ts";
import { watchMirrorVersion } from "./version-watch.ts";

export interface RegistryDeps {
  db: Kysely<Database>;
  broker: Broker;
  logger: Logger;
  config: RegistryConfig;
  /** Lease of a sync (see RegistrySyncDeps); tests shorten it. */
  leaseMs?: number;
  /**
   * How long a request waits for the mirror's first sync before answering 503 (default 8 s,
   * under the HTTP server's 10 s idle timeout); the sync goes on meanwhile.
   */
  firstSyncWaitMs?: number;
}

/** The registry mirror of one process: its sync, and the endpoint's reads. */
export interface Registry {
  sync: RegistrySync;
  /** Answers `GET /hub/mcp/registry` from the mirror, filling it first if no sync has completed. */
  list(query: RegistryQuery): Promise<RegistryPage>;
  /** The latest version's entry of the server `name`, read once the mirror is filled (as `list` waits for it). */
  latest(name: string): Promise<RegistryServer | undefined>;
  /** Stops listening for changes announced by other processes. */
  close(): Promise<void>;
}

const FILLING = "the registry mirror is being filled; try again shortly";

export async function createRegistry(deps: RegistryDeps): Promise<Registry> {
  const upstream = deps.config.url;
  const watch = await watchMirrorVersion({
    broker: deps.broker,
    read: async () => {
      const row = await readMirrorVersion(deps.db);
      return { completed: row.completed_at !== null && row.upstream === upstream, generation: Number(row.generation) };
    },
  });
  const sync = createRegistrySync({
    db: deps.db,
    logger: deps.logger,
    upstream: { url: upstream, timeoutMs: deps.config.timeoutMs },
    leaseMs: deps.leaseMs,
    onChange: () => watch.changed(),
  });
  const firstSyncWaitMs = deps.firstSyncWaitMs ?? 8000;
  const pages = createAnswerCache<RegistryPage>({ maxBytes: deps.config.cacheBytes, maxEntries: 10_000 });
  const totals = createAnswerCache<number>({ maxBytes: deps.config.cacheBytes, maxEntries: 10_000 });

  /**
   * The mirror's generation, once a sync from the configured upstream has completed. Until
   * then a request fills the mirror: it starts the sync here (or joins the one this process
   * runs, or waits for another process's) and waits up to `firstSyncWaitMs` for it; an
   * upstream that cannot be used is a 502, a sync still under way a 503.
   */
  async function filledGeneration(): Promise<number> {
    const deadline = Date.now() + firstSyncWaitMs;
    for (;;) {
      const version = await watch.current();
      if (version.completed) return version.generation;
      const running = sync.run();
      // The sync logs its own failure; one that ends after this request stopped waiting must not go unhandled.
      running.catch(() => undefined);
      const waited = Bun.sleep(Math.max(0, deadline - Date.now())).then(() => "waited" as const);
      let outcome: Awaited<typeof running> | "waited";
      try {
        outcome = await Promise.race([running, waited]);
      } catch (error) {
        if (error instanceof UpstreamError) throw new DomainError("bad_gateway", error.message);
        throw error;
      }
      if (outcome === "waited") throw new DomainError("unavailable", FILLING, { retryAfterSeconds: 5 });
      if (outcome === "busy") {
        if (Date.now() >= deadline) throw new DomainError("unavailable", FILLING, { retryAfterSeconds: 5 });
        await Bun.sleep(Math.min(200, Math.max(0, deadline - Date.now())));
      }
    }
  }

  return {
    sync,
    async list(query) {
      const plan = planQuery(query);
      const after = query.cursor ? decodeCursor(plan, query.cursor) : undefined;
      const generation = await filledGeneration();
      const pageKey = `${plan.fingerprint}|${query.limit}|${query.cursor ?? ""}`;
      const kept = pages.get(generation, pageKey);
      if (kept) return kept;
      const knownTotal = totals.get(generation, plan.fingerprint);
      const [read, total] = await Promise.all([
        readPage(deps.db, plan, query.limit, after),
        knownTotal ?? countMatches(deps.db, plan),
      ]);
      if (knownTotal === undefined) totals.set(generation, plan.fingerprint, total, 8);
      const answer = { ...read.page, total };
      pages.set(generation, pageKey, answer, read.bytes);
      return answer;
    },
    async latest(name) {
      await filledGeneration();
      return readLatestEntry(deps.db, name);
    },
    close: () => watch.close(),
  };
}
