import { listenToChannel } from "../broker/listener.ts";
import { type Broker, PLATFORM_SCOPE } from "../broker/port.ts";

/** Where changes of definitions are announced, to every process. */
const CHANNEL = "storage.definitions";

/**
 * Storage streams and buckets by name; flows by webhook id (what the webhook ingress looks up
 * per delivery); gateways by topic alone (accountId "", for the gateway data plane); flows by
 * their MCP tool name (what a `tools/call` looks up); an account's settings the worker reads
 * per run (accounts/settings.ts).
 */
export type DefinitionKind = "stream" | "bucket" | "webhook" | "gateway" | "tool" | "account";

export interface DefinitionCacheOptions {
  /**
   * How long a definition is used before the database is asked again (default 5 s): how
   * stale a process can be when an announcement is lost (a Broker reconnect).
   */
  ttlMs?: number;
  /** Most definitions a process keeps (default 10,000); the least recently loaded go first. */
  maxEntries?: number;
  /** How long to wait before listening again after the Broker refused (default 1 s). */
  retryMs?: number;
}

/**
 * Stream and bucket definitions (and flows by webhook id) kept in each process, so that a
 * publish, a key write or a webhook delivery costs no database round trip. A change is announced through the Broker, and every
 * process drops its copy as soon as it hears it. A load that was under way when any
 * change was heard is not kept, since it may have read the row before the change. Until
 * the process listens (the Broker was down at start-up), nothing is kept.
 */
export interface DefinitionCache {
  /** The definition, from this process's copy or from `load` (kept when found). */
  get<T>(
    kind: DefinitionKind,
    accountId: string,
    name: string,
    load: () => Promise<T | undefined>,
  ): Promise<T | undefined>;
  /** Drops the definition here and in every other process. Call once the change is committed. */
  changed(kind: DefinitionKind, accountId: string, name: string): Promise<void>;
  /** Stops listening for changes. */
  close(): Promise<void>;
}

/**
 * Resolves once the process listens for changes, or once the Broker refused: then it keeps
 * trying every `retryMs` in the background, and reads go to the database meanwhile.
 */
export async function createDefinitionCache(
  broker: Broker,
  options: DefinitionCacheOptions = {},
): Promise<DefinitionCache> {
  const ttlMs = options.ttlMs ?? 5000;
  const maxEntries = options.maxEntries ?? 10_000;
  const retryMs = options.retryMs ?? 1000;
  const entries = new Map<string, { value: unknown; expires: number }>();
  /** Loads under way: concurrent misses of one definition (an entry just expired under load) share one read. */
  const loading = new Map<string, Promise<unknown>>();
  /** Grows with every change heard, so a load can tell whether one came while it ran. */
  let changes = 0;

  const keyOf = (kind: DefinitionKind, accountId: string, name: string) => JSON.stringify([kind, accountId, name]);
  const drop = (key: string) => {
    entries.delete(key);
    // A read after the change must not join a load that began before it.
    loading.delete(key);
    changes += 1;
  };
  const listener = await listenToChannel(broker, CHANNEL, drop, retryMs);

  return {
    async get<T>(kind: DefinitionKind, accountId: string, name: string, load: () => Promise<T | undefined>) {
      if (!listener.listening()) return load();
      const key = keyOf(kind, accountId, name);
      const cached = entries.get(key);
      if (cached && cached.expires > performance.now()) return cached.value as T;
      const pending = loading.get(key);
      if (pending !== undefined) return pending as Promise<T | undefined>;
      const before = changes;
      const loaded = load()
        .then((value) => {
          if (value !== undefined && changes === before) {
            entries.delete(key);
            entries.set(key, { value, expires: performance.now() + ttlMs });
            if (entries.size > maxEntries) {
              const oldest = entries.keys().next().value;
              if (oldest !== undefined) entries.delete(oldest);
            }
          }
          return value;
        })
        .finally(() => {
          if (loading.get(key) === loaded) loading.delete(key);
        });
      loading.set(key, loaded);
      return loaded;
    },

    async changed(kind, accountId, name) {
      const key = keyOf(kind, accountId, name);
      drop(key);
      // The change is committed: a failed announcement leaves other processes stale for at
      // most ttlMs, which is no reason to fail the request that made it.
      await broker.publish(PLATFORM_SCOPE, CHANNEL, key).catch(() => undefined);
    },

    close: () => listener.close(),
  };
}
