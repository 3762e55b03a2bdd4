import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { DatabaseHandle } from "@platform/db";
import { openTestDatabase } from "@platform/db/testing";
import { createSingleProcessLimiter } from "./single-process-limiter.ts";

/**
 * The embedded limiter decides in memory: calls arriving together are still decided exactly,
 * and a process started again on the same database remembers the calls it allowed.
 */
describe("the single-process limiter on pglite", () => {
  let database: DatabaseHandle;
  beforeAll(async () => {
    database = await openTestDatabase("pglite");
  });
  afterAll(() => database.close());

  test("of 100 calls at once, exactly the limit is allowed, and the refused ones say when to come back", async () => {
    const allow = createSingleProcessLimiter(database.db);
    const decisions = await Promise.all(Array.from({ length: 100 }, () => allow("acct", "gateway:a", 10, 60_000)));
    expect(decisions.filter((decision) => decision.allowed)).toHaveLength(10);
    const refused = decisions.filter((decision) => !decision.allowed);
    expect(refused.every((decision) => decision.retryAfterSeconds >= 59 && decision.retryAfterSeconds <= 60)).toBe(
      true,
    );
  });

  test("a restart remembers the calls it allowed; another key is counted apart", async () => {
    const before = createSingleProcessLimiter(database.db);
    const allowed = await Promise.all(Array.from({ length: 3 }, () => before("acct", "gateway:b", 3, 60_000)));
    await Promise.all(allowed.map((decision) => decision.recorded));
    const after = createSingleProcessLimiter(database.db);
    expect((await after("acct", "gateway:b", 3, 60_000)).allowed).toBe(false);
    expect((await after("acct", "gateway:c", 3, 60_000)).allowed).toBe(true);
    expect((await after("other", "gateway:b", 3, 60_000)).allowed).toBe(true);
  });

  test("a call is allowed again once the window has passed the oldest", async () => {
    const allow = createSingleProcessLimiter(database.db);
    expect((await allow("acct", "gateway:d", 1, 200)).allowed).toBe(true);
    expect((await allow("acct", "gateway:d", 1, 200)).allowed).toBe(false);
    await Bun.sleep(250);
    expect((await allow("acct", "gateway:d", 1, 200)).allowed).toBe(true);
  });
});
