import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { DatabaseHandle } from "@platform/db";
import { openTestDatabase } from "@platform/db/testing";
import { sql } from "kysely";
import { createSingleProcessLimiter, MOST_ROWS } from "./single-process-limiter.ts";

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

  test("its record shares the commit of the statement the caller sends next, and a restart still remembers it", async () => {
    const write = database.commitWithNext;
    if (!write) throw new Error("an embedded database writes with the next statement");
    const before = createSingleProcessLimiter(database.db, write);
    await sql`create temporary table started (run text)`.execute(database.db);
    const decisions = await Promise.all(Array.from({ length: 3 }, () => before("acct", "gateway:shared", 3, 60_000)));
    // As a gateway's run is inserted: by a group commit, at the end of the turn its call was allowed in.
    const run = new Promise((resolve) => setImmediate(resolve)).then(() =>
      sql`insert into started values ('run')`.execute(database.db),
    );
    await Promise.all([run, ...decisions.map((decision) => decision.recorded)]);
    const { rows } = await sql<{ same: boolean }>`
      select (select xmin::text from started) = (select xmin::text from broker_rate_limit_turns
        where scope = 'acct' and key = 'gateway:shared') as same`.execute(database.db);
    expect(rows).toEqual([{ same: true }]);
    const after = createSingleProcessLimiter(database.db);
    expect((await after("acct", "gateway:shared", 3, 60_000)).allowed).toBe(false);
  });

  /** The rows the limiter keeps for a key, in both of its tables. */
  async function rowsOf(scope: string, key: string): Promise<number> {
    const { rows } = await sql<{ count: number }>`
      select (select count(*) from broker_rate_limit_turns where scope = ${scope} and key = ${key})::int
        + (select count(*) from broker_rate_limits where scope = ${scope} and key = ${key})::int as count`.execute(
      database.db,
    );
    return rows[0]?.count ?? 0;
  }

  test("calls allowed one turn at a time are all remembered by a restart, in a bounded number of rows", async () => {
    const before = createSingleProcessLimiter(database.db);
    const turns = MOST_ROWS + 100;
    for (let turn = 0; turn < turns; turn++) {
      const decision = await before("acct", "gateway:turns", 2 * MOST_ROWS, 60_000);
      expect(decision.allowed).toBe(true);
      await decision.recorded;
    }
    // A row per turn; a window that only grows is folded into one row once the key has MOST_ROWS.
    expect(await rowsOf("acct", "gateway:turns")).toBeLessThanOrEqual(MOST_ROWS + 1);
    const after = createSingleProcessLimiter(database.db);
    const decisions = await Promise.all(
      Array.from({ length: MOST_ROWS }, () => after("acct", "gateway:turns", 2 * MOST_ROWS, 60_000)),
    );
    expect(decisions.filter((decision) => decision.allowed)).toHaveLength(2 * MOST_ROWS - turns);
  });

  test("a busy key whose window slides is folded long before it has MOST_ROWS rows", async () => {
    const allow = createSingleProcessLimiter(database.db);
    // Turns of 10 calls (at least a millisecond each) in a window of 50 ms: the window holds at most 50 turns, the rows many more.
    for (let turn = 0; turn < 300; turn++) {
      const decisions = await Promise.all(Array.from({ length: 10 }, () => allow("acct", "gateway:busy", 10_000, 50)));
      await Promise.all(decisions.map((decision) => decision.recorded));
      if (turn % 5 === 0) await Bun.sleep(5);
    }
    // A fold comes once the turns since the last wrote as many hits as the window holds: at most 64 turns, or 50 ms of them.
    expect(await rowsOf("acct", "gateway:busy")).toBeLessThan(MOST_ROWS / 4);
  });

  test("a window written before the limiter kept turns still counts, until the key's first fold replaces it", async () => {
    const now = Date.now();
    await sql`
      insert into broker_rate_limits (scope, key, hits, expires_at)
      values ('acct', 'gateway:older', ${`{${now - 2000},${now - 1000}}`}::float8[], now() + interval '1 minute')`.execute(
      database.db,
    );
    const allow = createSingleProcessLimiter(database.db);
    const first = await allow("acct", "gateway:older", 3, 60_000);
    await first.recorded;
    expect(first.allowed).toBe(true);
    expect((await allow("acct", "gateway:older", 3, 60_000)).allowed).toBe(false);

    const turns = MOST_ROWS + 10;
    for (let turn = 0; turn < turns; turn++) await (await allow("acct", "gateway:older", 10_000, 60_000)).recorded;
    const { rows } = await sql`select 1 from broker_rate_limits where scope = 'acct' and key = 'gateway:older'`.execute(
      database.db,
    );
    expect(rows).toHaveLength(0);
    // Folded, the two older calls and the ones since are still the window's.
    const inWindow = 2 + 1 + turns;
    const restarted = createSingleProcessLimiter(database.db);
    expect((await restarted("acct", "gateway:older", inWindow, 60_000)).allowed).toBe(false);
    expect((await restarted("acct", "gateway:older", inWindow + 1, 60_000)).allowed).toBe(true);
  });

  test("a call is allowed again once the window has passed the oldest", async () => {
    const allow = createSingleProcessLimiter(database.db);
    expect((await allow("acct", "gateway:d", 1, 200)).allowed).toBe(true);
    expect((await allow("acct", "gateway:d", 1, 200)).allowed).toBe(false);
    await Bun.sleep(250);
    expect((await allow("acct", "gateway:d", 1, 200)).allowed).toBe(true);
  });
});
