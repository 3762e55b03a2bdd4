import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { freeLoopbackPort } from "@platform/db/testing";
import { createRedisBroker } from "../broker/redis/index.ts";
import { brokerBackends, eventually, randomScope, type TestBroker } from "../broker/test-backends.ts";
import { createDefinitionCache, type DefinitionCache, type DefinitionCacheOptions } from "./definition-cache.ts";

/** A stand-in for the database: a value per name, and how often each was read. */
function table(initial: Record<string, string>) {
  const rows = new Map(Object.entries(initial));
  const reads = new Map<string, number>();
  return {
    rows,
    reads: (name: string) => reads.get(name) ?? 0,
    load: (name: string) => async () => {
      reads.set(name, (reads.get(name) ?? 0) + 1);
      return rows.get(name);
    },
  };
}

for (const backend of brokerBackends()) {
  describe.skipIf(Boolean(backend.skip))(
    `storage definition cache on ${backend.name}${backend.skip ? ` (skipped: ${backend.skip})` : ""}`,
    () => {
      let opened: TestBroker;
      const caches: DefinitionCache[] = [];
      beforeAll(async () => {
        opened = await backend.open();
      }, 60_000);
      afterAll(async () => {
        for (const cache of caches) await cache.close();
        await opened?.close();
      });

      /** A cache as one process would have it; `peer` puts it on a broker of its own, as another process. */
      async function cache(options: DefinitionCacheOptions & { peer?: boolean } = {}) {
        const broker = options.peer ? await opened.openPeer() : opened.broker;
        const created = await createDefinitionCache(broker, { ttlMs: 60_000, ...options });
        caches.push(created);
        return created;
      }

      test("a definition is read once, then served from the process; misses are not kept", async () => {
        const account = randomScope("acct");
        const db = table({ orders: "v1" });
        const one = await cache();
        expect(await one.get("stream", account, "orders", db.load("orders"))).toBe("v1");
        expect(await one.get("stream", account, "orders", db.load("orders"))).toBe("v1");
        expect(db.reads("orders")).toBe(1);
        // Another kind, account or name is another entry.
        await one.get("bucket", account, "orders", db.load("orders"));
        await one.get("stream", randomScope("acct"), "orders", db.load("orders"));
        expect(db.reads("orders")).toBe(3);

        expect(await one.get("stream", account, "missing", db.load("missing"))).toBeUndefined();
        db.rows.set("missing", "created");
        expect(await one.get("stream", account, "missing", db.load("missing"))).toBe("created");
      });

      test("a change made in one process is dropped by every process", async () => {
        const account = randomScope("acct");
        const db = table({ orders: "v1" });
        const here = await cache();
        const there = await cache({ peer: true });
        await here.get("stream", account, "orders", db.load("orders"));
        await there.get("stream", account, "orders", db.load("orders"));
        expect(db.reads("orders")).toBe(2);

        db.rows.set("orders", "v2");
        await here.changed("stream", account, "orders");
        expect(await here.get("stream", account, "orders", db.load("orders"))).toBe("v2");
        await eventually(async () => (await there.get("stream", account, "orders", db.load("orders"))) === "v2");
      });

      test("a load under way when a change is heard is used once but not kept", async () => {
        const account = randomScope("acct");
        const one = await cache();
        let release: () => void = () => {};
        const slow = async () => {
          await new Promise<void>((resolve) => {
            release = resolve;
          });
          return "read before the change";
        };
        const loading = one.get("stream", account, "orders", slow);
        await one.changed("stream", account, "other");
        release();
        expect(await loading).toBe("read before the change");
        expect(await one.get("stream", account, "orders", async () => "read after")).toBe("read after");
      });

      test("concurrent misses of one definition share one read; a read after a change does not join it", async () => {
        const account = randomScope("acct");
        const db = table({ orders: "v1" });
        const one = await cache();
        const answers = await Promise.all(
          Array.from({ length: 20 }, () => one.get("stream", account, "orders", db.load("orders"))),
        );
        expect({ answers: new Set(answers), reads: db.reads("orders") }).toEqual({
          answers: new Set(["v1"]),
          reads: 1,
        });

        let release: () => void = () => {};
        const slow = async () => {
          await new Promise<void>((resolve) => {
            release = resolve;
          });
          return "read before the change";
        };
        const first = one.get("stream", account, "flow", slow);
        await one.changed("stream", account, "flow");
        const after = one.get("stream", account, "flow", async () => "read after the change");
        release();
        expect([await first, await after]).toEqual(["read before the change", "read after the change"]);
      });

      test("entries expire after ttlMs, and the oldest go beyond maxEntries", async () => {
        const account = randomScope("acct");
        const db = table({ a: "1", b: "2", c: "3" });
        const short = await cache({ ttlMs: 50 });
        await short.get("stream", account, "a", db.load("a"));
        await Bun.sleep(100);
        await short.get("stream", account, "a", db.load("a"));
        expect(db.reads("a")).toBe(2);

        const small = await cache({ maxEntries: 2 });
        for (const name of ["a", "b", "c"]) await small.get("bucket", account, name, db.load(name));
        for (const name of ["b", "c", "a"]) await small.get("bucket", account, name, db.load(name));
        expect([db.reads("a"), db.reads("b"), db.reads("c")]).toEqual([4, 1, 1]);
      });
    },
  );
}

const redisServer = Bun.which("redis-server");

describe.skipIf(!redisServer)("storage definition cache while the Broker is down", () => {
  test("reads go to the database until the process can listen, then it keeps definitions", async () => {
    const port = await freeLoopbackPort();
    const broker = await createRedisBroker(`redis://127.0.0.1:${port}`);
    const cache = await createDefinitionCache(broker, { ttlMs: 60_000, retryMs: 50 });
    const db = table({ orders: "v1" });
    let redis: ReturnType<typeof Bun.spawn> | undefined;
    try {
      for (let i = 0; i < 3; i++) expect(await cache.get("stream", "acct", "orders", db.load("orders"))).toBe("v1");
      expect(db.reads("orders")).toBe(3);

      redis = Bun.spawn([redisServer as string, "--port", String(port), "--bind", "127.0.0.1", "--save", ""], {
        stdout: "ignore",
        stderr: "ignore",
      });
      await eventually(async () => {
        const before = db.reads("orders");
        await cache.get("stream", "acct", "orders", db.load("orders"));
        await cache.get("stream", "acct", "orders", db.load("orders"));
        return db.reads("orders") - before === 1;
      }, 10_000);
      await cache.changed("stream", "acct", "orders");
      await cache.get("stream", "acct", "orders", db.load("orders"));
      const reads = db.reads("orders");
      await cache.get("stream", "acct", "orders", db.load("orders"));
      expect(db.reads("orders")).toBe(reads);
    } finally {
      await cache.close();
      await broker.close();
      redis?.kill();
      await redis?.exited;
    }
  }, 20_000);
});
