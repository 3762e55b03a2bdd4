import { describe, expect, test } from "bun:test";
import { parseRedisAddress } from "./address.ts";

describe("REDIS_URL", () => {
  test("a redis:// or rediss:// URL names one server", () => {
    expect(parseRedisAddress("redis://cache.internal:6379/0")).toEqual({
      kind: "single",
      url: "redis://cache.internal:6379/0",
    });
    expect(parseRedisAddress("rediss://:secret@cache.internal").kind).toBe("single");
  });

  test("redis+cluster:// names the seed nodes of a cluster, with credentials and TLS as in a redis:// URL", () => {
    expect(parseRedisAddress("redis+cluster://10.0.0.1:7000,10.0.0.2:7001,redis-3")).toEqual({
      kind: "cluster",
      nodes: [
        { host: "10.0.0.1", port: 7000 },
        { host: "10.0.0.2", port: 7001 },
        { host: "redis-3", port: 6379 },
      ],
      username: undefined,
      password: undefined,
      tls: false,
    });
    expect(parseRedisAddress("rediss+cluster://app:p%40ss@[::1]:7000,node-2:7000/")).toEqual({
      kind: "cluster",
      nodes: [
        { host: "::1", port: 7000 },
        { host: "node-2", port: 7000 },
      ],
      username: "app",
      password: "p@ss",
      tls: true,
    });
  });

  test("anything else is refused with what is wrong", () => {
    expect(() => parseRedisAddress("http://cache:6379")).toThrow(
      "is not a redis://, rediss:// or redis+cluster:// URL",
    );
    expect(() => parseRedisAddress("redis+cluster://a:7000,b:99999")).toThrow('"b:99999" is not host:port');
    expect(() => parseRedisAddress("redis+cluster://a:7000,,b")).toThrow('"" is not host:port');
    expect(() => parseRedisAddress("redis://cache:port")).toThrow("is not a valid URL");
  });
});
