import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { DatabaseHandle } from "@platform/db";
import { databaseBackends, openTestDatabase } from "@platform/db/testing";
import { sql } from "kysely";
import { groupCommit, keyedGroupCommit } from "./group-commit.ts";

for (const { backend, skip } of databaseBackends()) {
  describe.skipIf(Boolean(skip))(`group commits on ${backend}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let database: DatabaseHandle;
    beforeAll(async () => {
      database = await openTestDatabase(backend);
      await sql`create table group_commit_rows (account text not null, note text not null)`.execute(database.db);
    }, 60_000);
    afterAll(() => database?.close());

    /** One INSERT for the batch, as the run starter writes the starts of every account. */
    function inserter(statements: number[]) {
      return groupCommit<{ account: string; note: string }, true>(
        async (items) => {
          statements.push(items.length);
          await sql`
            insert into group_commit_rows (account, note)
            select v.account, v.note from jsonb_to_recordset(${JSON.stringify(items)}::jsonb) as v(account text, note text)`.execute(
            database.db,
          );
          return items.map(() => true as const);
        },
        { maxBatch: 500, maxInFlight: 1 },
      );
    }

    test("one item the database refuses fails alone: every other item of its statement is written", async () => {
      const statements: number[] = [];
      const insert = inserter(statements);
      // A NUL character in text: PostgreSQL refuses the whole statement (22021 or 22P05).
      const calls = Array.from({ length: 200 }, (_, n) =>
        insert(n === 137 ? { account: "attacker", note: "bad\u0000" } : { account: "victim", note: `ok ${n}` }),
      );
      const settled = await Promise.allSettled(calls);
      const refused = settled.flatMap((outcome, n) => (outcome.status === "rejected" ? [n] : []));
      expect(refused).toEqual([137]);
      const reason = (settled[137] as PromiseRejectedResult).reason as { code?: string };
      expect(reason.code).toMatch(/^22/);
      const rows = await sql<{ n: number }>`
        select count(*)::int as n from group_commit_rows where account = 'victim'`.execute(database.db);
      expect(rows.rows[0]?.n).toBe(199);
      // The first statement took every call; bisecting found the bad one in a few more, not 200.
      expect(statements[0]).toBe(200);
      expect(statements.length).toBeLessThanOrEqual(2 * Math.ceil(Math.log2(200)) + 1);
    });

    test("a failure that is not the items' fault fails the batch at once, without retrying halves", async () => {
      let statements = 0;
      const write = groupCommit<number, number>(
        async () => {
          statements++;
          throw Object.assign(new Error("Connection terminated unexpectedly"), { code: "ECONNRESET" });
        },
        { maxBatch: 500, maxInFlight: 1 },
      );
      const settled = await Promise.allSettled(Array.from({ length: 50 }, (_, n) => write(n)));
      expect(settled.every((outcome) => outcome.status === "rejected")).toBe(true);
      expect(statements).toBe(1);
    });
  });
}

describe("group commits per key", () => {
  test("a key's statements go one at a time, and no key waits for another's", async () => {
    const written: string[][] = [];
    let open!: () => void;
    const slowGate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const write = keyedGroupCommit<{ key: string; n: number }, string>(
      (item) => item.key,
      async (items) => {
        written.push(items.map((item) => `${item.key}${item.n}`));
        if (items[0]?.key === "slow") await slowGate;
        return items.map((item) => `${item.key}${item.n} written`);
      },
      { maxBatch: 100, maxInFlight: 1 },
    );

    const slow = [write({ key: "slow", n: 1 }), write({ key: "slow", n: 2 })];
    await new Promise((resolve) => setImmediate(resolve));
    // Queued while the slow key's statement is in flight: it waits for it, and goes in the next.
    const laterSlow = write({ key: "slow", n: 3 });
    // Another key is written meanwhile.
    expect(await write({ key: "fast", n: 1 })).toBe("fast1 written");
    expect(written).toEqual([["slow1", "slow2"], ["fast1"]]);

    open();
    expect(await Promise.all([...slow, laterSlow])).toEqual(["slow1 written", "slow2 written", "slow3 written"]);
    expect(written).toEqual([["slow1", "slow2"], ["fast1"], ["slow3"]]);
  });
});
