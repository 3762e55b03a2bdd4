import { afterAll, describe, expect, test } from "bun:test";
import { PGlite } from "@electric-sql/pglite";
import { Kysely, sql } from "kysely";
import { pgliteDialect } from "./pglite-statements.ts";
import type { Database } from "./schema.ts";
import { vacuumTablesDue } from "./vacuum.ts";

describe("vacuuming PGlite, which has no autovacuum", () => {
  const db = new Kysely<Database>({ dialect: pgliteDialect(new PGlite()) });
  afterAll(() => db.destroy());

  /** PGlite hands its counters to the statistics at most once a second, at the end of a statement. */
  const statisticsCaughtUp = async () => {
    await Bun.sleep(1100);
    await sql`select 1`.execute(db);
  };
  const pages = async (table: string) =>
    Number((await sql<{ b: string }>`select pg_relation_size(${table}::regclass) as b`.execute(db)).rows[0]?.b) / 8192;
  /** A queue's busy second: 500 rows of 1 KB come and go. */
  const churn = async (table: string) => {
    await sql`insert into ${sql.table(table)} (body) select repeat('x', 1000) from generate_series(1, 500)`.execute(db);
    await sql`delete from ${sql.table(table)}`.execute(db);
  };
  const createQueue = (table: string) =>
    sql`create table ${sql.table(table)} (id serial primary key, body text)`.execute(db);

  test("left alone, a table whose rows come and go grows by all of them each time", async () => {
    await createQueue("left_alone");
    const sizes: number[] = [];
    for (let round = 0; round < 3; round++) {
      await churn("left_alone");
      sizes.push(await pages("left_alone"));
    }
    expect(sizes[1]).toBeGreaterThan((sizes[0] as number) * 1.9);
    expect(sizes[2]).toBeGreaterThan((sizes[0] as number) * 2.9);
    await sql`drop table left_alone`.execute(db);
  });

  test("vacuumed once due, it keeps its size: its dead rows' space is used again", async () => {
    await createQueue("kept_up");
    const sizes: number[] = [];
    for (let round = 0; round < 3; round++) {
      await churn("kept_up");
      await statisticsCaughtUp();
      const vacuumed = await vacuumTablesDue(db);
      expect(vacuumed.find(({ table }) => table === "public.kept_up")).toMatchObject({ vacuumed: true });
      sizes.push(await pages("kept_up"));
    }
    expect(sizes[2]).toBeLessThanOrEqual(sizes[0] as number);
  });

  test("a table nothing changed since its vacuum is not vacuumed again; one whose rows were counted is analyzed", async () => {
    await statisticsCaughtUp();
    expect((await vacuumTablesDue(db)).map(({ table }) => table)).not.toContain("public.kept_up");

    await createQueue("counted");
    await sql`insert into counted (body) select 'x' from generate_series(1, 300)`.execute(db);
    await statisticsCaughtUp();
    const vacuumed = await vacuumTablesDue(db);
    // 300 inserted rows pass the analyze threshold (50) but not the insert vacuum threshold (1,000).
    expect(vacuumed.find(({ table }) => table === "public.counted")).toMatchObject({ vacuumed: false, analyzed: true });
    const { rows } = await sql<{
      n: number;
    }>`select reltuples::int as n from pg_class where relname = 'counted'`.execute(db);
    expect(rows[0]?.n).toBe(300);
  });
});
