import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Broker } from "../broker/port.ts";
import { brokerBackends, eventually, type TestBroker } from "../broker/test-backends.ts";
import type { Principal } from "../caller.ts";
import { createLogger } from "../logger.ts";
import { type AuthCache, createAuthCache } from "./auth-cache.ts";

const logger = createLogger({ level: "silent", name: "auth-cache-test" });

/** The Postgres adapter is the same on both servers; the cache runs on PGlite and Redis. */
const backends = brokerBackends().filter((b) => b.name !== "postgres");

const principal = (accountId: string, userId: string, apiKeyId?: string): Principal => ({
  accountId,
  userId,
  role: "member",
  ...(apiKeyId ? { apiKeyId } : {}),
});

for (const backend of backends) {
  describe.skipIf(Boolean(backend.skip))(
    `auth cache on ${backend.name}${backend.skip ? ` (skipped: ${backend.skip})` : ""}`,
    () => {
      let opened: TestBroker;
      let peer: Broker;
      const caches: AuthCache[] = [];

      beforeAll(async () => {
        opened = await backend.open();
        peer = await opened.openPeer();
      }, 60_000);
      afterAll(async () => {
        for (const cache of caches) await cache.close();
        await opened?.close();
      });

      /** A cache once its subscription is active (it stores nothing before). */
      async function cache(broker: Broker, ttlMs = 60_000): Promise<AuthCache> {
        const created = createAuthCache({ broker, logger, ttlMs });
        caches.push(created);
        const probe = crypto.randomUUID();
        await eventually(() => {
          created.rememberSession(created.ticket(), probe, principal("a", "u"));
          return created.session(probe) !== undefined;
        });
        return created;
      }

      test("a revocation in one process evicts in the other, per session, member, user and API key", async () => {
        const here = await cache(opened.broker);
        const there = await cache(peer);
        const fill = (target: AuthCache) => {
          const ticket = target.ticket();
          target.rememberSession(ticket, "s1", principal("acct-1", "user-1"));
          target.rememberSession(ticket, "s2", principal("acct-1", "user-2"));
          target.rememberSession(ticket, "s3", principal("acct-2", "user-2"));
          target.rememberApiKey(ticket, "hash-1", {
            principal: principal("acct-1", "user-1", "key-1"),
            allowedPaths: null,
          });
          target.rememberApiKey(ticket, "hash-2", {
            principal: principal("acct-1", "user-3", "key-2"),
            allowedPaths: ["/x"],
          });
        };
        fill(there);
        expect(there.session("s1")).toEqual(principal("acct-1", "user-1"));

        await here.revoke({ kind: "session", sessionId: "s1" });
        await eventually(() => there.session("s1") === undefined);
        expect(there.session("s2")).toBeDefined();

        await here.revoke({ kind: "member", accountId: "acct-1", userId: "user-2" });
        await eventually(() => there.session("s2") === undefined);
        expect(there.session("s3")).toBeDefined();

        await here.revoke({ kind: "user", userId: "user-2" });
        await eventually(() => there.session("s3") === undefined);

        await here.revoke({ kind: "api_key", apiKeyId: "key-2" });
        await eventually(() => there.apiKey("hash-2") === undefined);
        expect(there.apiKey("hash-1")?.principal.apiKeyId).toBe("key-1");

        await here.revoke({ kind: "member", accountId: "acct-1", userId: "user-1" });
        await eventually(() => there.apiKey("hash-1") === undefined);
      });

      test("the revoking process evicts before it announces, and a lookup that raced a revocation stores nothing", async () => {
        const here = await cache(opened.broker);
        here.rememberSession(here.ticket(), "mine", principal("acct", "user"));
        const revoking = here.revoke({ kind: "session", sessionId: "mine" });
        expect(here.session("mine")).toBeUndefined();
        await revoking;

        // A lookup began (ticket taken, database read), then a revocation came, then it tries to store.
        const ticket = here.ticket();
        await here.revoke({ kind: "user", userId: "someone else" });
        here.rememberSession(ticket, "raced", principal("acct", "user"));
        expect(here.session("raced")).toBeUndefined();
      });

      test("entries expire after the TTL, and a TTL of 0 keeps nothing", async () => {
        const short = await cache(opened.broker, 50);
        short.rememberSession(short.ticket(), "brief", principal("acct", "user"));
        expect(short.session("brief")).toBeDefined();
        await eventually(() => short.session("brief") === undefined);

        const off = createAuthCache({ broker: opened.broker, logger, ttlMs: 0 });
        caches.push(off);
        off.rememberSession(off.ticket(), "never", principal("acct", "user"));
        expect(off.session("never")).toBeUndefined();
      });
    },
  );
}
