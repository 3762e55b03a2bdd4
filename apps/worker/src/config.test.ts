import { describe, expect, test } from "bun:test";
import { loadWorkerConfig } from "./config.ts";

describe("worker configuration", () => {
  const required = { DATABASE_URL: "postgres://db.internal/platform", REDIS_URL: "redis://cache.internal:6379" };

  test("needs DATABASE_URL and REDIS_URL, and names both when they are missing", () => {
    expect(() => loadWorkerConfig({})).toThrow(/DATABASE_URL.*REDIS_URL/);
    const config = loadWorkerConfig(required);
    expect(config).toMatchObject({ concurrency: 4, healthPort: 3001, shutdownGraceMs: 10_000 });
  });

  test("reads every worker setting", () => {
    const config = loadWorkerConfig({
      DATABASE_URL: "postgres://db.internal/platform",
      REDIS_URL: "redis://cache.internal:6379",
      WORKER_CONCURRENCY: "16",
      WORKER_HEALTH_PORT: "9000",
      WORKER_SHUTDOWN_GRACE_MS: "2500",
      LOG_LEVEL: "warn",
    });
    expect(config).toMatchObject({ concurrency: 16, healthPort: 9000, shutdownGraceMs: 2500 });
    expect(config.core).toMatchObject({
      databaseUrl: "postgres://db.internal/platform",
      redisUrl: "redis://cache.internal:6379",
      logLevel: "warn",
    });
  });

  test("REDIS_URL may name a Redis Cluster by its nodes", () => {
    const cluster = "redis+cluster://10.0.0.1:6379,10.0.0.2:6379";
    expect(loadWorkerConfig({ ...required, REDIS_URL: cluster }).core.redisUrl).toBe(cluster);
  });

  test("a bad value is refused in one line that names the variable", () => {
    for (const [name, value] of [
      ["WORKER_CONCURRENCY", "lots"],
      ["WORKER_CONCURRENCY", "0"],
      ["WORKER_HEALTH_PORT", "70000"],
      ["REDIS_URL", "not a url"],
      ["REDIS_URL", "redis+cluster://10.0.0.1:6379,:6379"],
      ["LOG_LEVEL", "loud"],
    ] as const) {
      let message = "";
      try {
        loadWorkerConfig({ ...required, [name]: value });
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message).toContain(name);
      expect(message).not.toContain("\n");
    }
  });
});
