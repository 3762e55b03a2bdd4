import { type Broker, PLATFORM_SCOPE, type Unsubscribe } from "../broker/port.ts";
import type { Principal } from "../caller.ts";
import { messageOf } from "../errors.ts";
import type { Logger } from "../logger.ts";

/**
 * What invalidates a verified credential. Each is published once the database change that
 * caused it has committed.
 */
export type Revocation =
  /** A sign-in session ended (logout, refresh-token reuse). */
  | { kind: "session"; sessionId: string }
  /** A user left an account, or their role in it changed: their sessions and keys there. */
  | { kind: "member"; accountId: string; userId: string }
  /** Everything of a user, in every account (password reset). */
  | { kind: "user"; userId: string }
  /** An API key was deleted. */
  | { kind: "api_key"; apiKeyId: string };

/** An API key as verified: who it acts as, and where it may be used. */
export interface VerifiedApiKey {
  principal: Principal;
  allowedPaths: string[] | null;
}

interface Entry<T> {
  value: T;
  expiresAt: number;
}

/** A lookup that may fill the cache: `generation` says whether a revocation happened meanwhile. */
export interface CacheTicket {
  readonly generation: number;
}

/**
 * A short-lived per-process cache of verified credentials, so that an authenticated request
 * costs no database round trip. Revocation stays immediate: the process that revokes evicts
 * at once and tells every other process through the Broker's notifications, and a lookup
 * that raced a revocation (read the database before it, would store after it) does not
 * store. Entries also expire after `ttlMs`, which bounds staleness if a notification is ever
 * lost (the broker was unreachable when it was sent). Until its subscription is active the
 * cache stores nothing.
 */
export interface AuthCache {
  /** Call before reading the database for a credential; pass to `remember*`. */
  ticket(): CacheTicket;
  session(sessionId: string): Principal | undefined;
  rememberSession(ticket: CacheTicket, sessionId: string, principal: Principal): void;
  apiKey(keyHash: string): VerifiedApiKey | undefined;
  rememberApiKey(ticket: CacheTicket, keyHash: string, verified: VerifiedApiKey): void;
  /** Evicts here, then in every other process. Call after the change has committed. */
  revoke(revocation: Revocation): Promise<void>;
  close(): Promise<void>;
}

export interface AuthCacheOptions {
  broker: Broker;
  logger: Logger;
  /** How long a verified credential is trusted without the database; 0 turns the cache off. */
  ttlMs: number;
  /** Most entries per kind (sessions, API keys); the oldest go first. */
  maxEntries?: number;
}

const CHANNEL = "auth-revocations";

export function createAuthCache(options: AuthCacheOptions): AuthCache {
  const { broker, logger, ttlMs } = options;
  const maxEntries = options.maxEntries ?? 50_000;
  const sessions = new Map<string, Entry<Principal>>();
  const apiKeys = new Map<string, Entry<VerifiedApiKey>>();
  let generation = 0;
  let listening = false;
  let closed = false;
  let unsubscribe: Unsubscribe | undefined;

  function evict(revocation: Revocation): void {
    generation++;
    const matches = (principal: Principal): boolean => {
      switch (revocation.kind) {
        case "session":
          return false;
        case "member":
          return principal.accountId === revocation.accountId && principal.userId === revocation.userId;
        case "user":
          return principal.userId === revocation.userId;
        case "api_key":
          return principal.apiKeyId === revocation.apiKeyId;
      }
    };
    if (revocation.kind === "session") sessions.delete(revocation.sessionId);
    for (const [key, entry] of sessions) if (matches(entry.value)) sessions.delete(key);
    for (const [key, entry] of apiKeys) if (matches(entry.value.principal)) apiKeys.delete(key);
  }

  function read<T>(map: Map<string, Entry<T>>, key: string): T | undefined {
    const entry = map.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt <= Date.now()) {
      map.delete(key);
      return undefined;
    }
    return entry.value;
  }

  function store<T>(map: Map<string, Entry<T>>, ticket: CacheTicket, key: string, value: T): void {
    if (!listening || ttlMs <= 0 || ticket.generation !== generation) return;
    if (map.size >= maxEntries) {
      // Maps keep insertion order: the first key is the oldest entry.
      const oldest = map.keys().next().value;
      if (oldest !== undefined) map.delete(oldest);
    }
    map.set(key, { value, expiresAt: Date.now() + ttlMs });
  }

  async function subscribe(attempt = 0): Promise<void> {
    if (closed || ttlMs <= 0) return;
    try {
      const off = await broker.subscribe(PLATFORM_SCOPE, CHANNEL, (message) => {
        try {
          evict(JSON.parse(message) as Revocation);
        } catch {
          // A message this version cannot read: drop everything rather than keep what it meant to evict.
          generation++;
          sessions.clear();
          apiKeys.clear();
        }
      });
      if (closed) {
        await off();
        return;
      }
      unsubscribe = off;
      listening = true;
    } catch (error) {
      if (attempt % 20 === 0) {
        logger.warn({ err: messageOf(error) }, "auth cache off until the broker answers");
      }
      setTimeout(() => void subscribe(attempt + 1), Math.min(5000, 100 * 2 ** Math.min(attempt, 6))).unref?.();
    }
  }
  void subscribe();

  return {
    ticket: () => ({ generation }),
    session: (sessionId) => read(sessions, sessionId),
    rememberSession: (ticket, sessionId, principal) => store(sessions, ticket, sessionId, principal),
    apiKey: (keyHash) => read(apiKeys, keyHash),
    rememberApiKey: (ticket, keyHash, verified) => store(apiKeys, ticket, keyHash, verified),
    async revoke(revocation) {
      evict(revocation);
      try {
        await broker.publish(PLATFORM_SCOPE, CHANNEL, JSON.stringify(revocation));
      } catch (error) {
        // The database change stands; other processes drop their copy within ttlMs.
        logger.warn(
          { err: messageOf(error), revocation: revocation.kind, ttlMs },
          "revocation not announced to other processes; their cached credentials expire within the TTL",
        );
      }
    },
    async close() {
      closed = true;
      listening = false;
      await unsubscribe?.();
    },
  };
}
