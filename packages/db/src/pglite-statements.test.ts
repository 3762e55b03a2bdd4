import { afterAll, describe, expect, test } from "bun:test";
import { PGlite } from "@electric-sql/pglite";
import { Kysely, sql } from "kysely";
import { pgliteDialect } from "./pglite-statements.ts";

describe("statements on PGlite, kept prepared", () => {
  const pglite = new PGlite();
  const db = new Kysely<Record<string, never>>({ dialect: pgliteDialect(pglite) });
  afterAll(() => db.destroy());

  const kept = async () =>
    (await sql<{ n: number }>`select count(*)::int as n from pg_prepared_statements`.execute(db)).rows[0]?.n;

  test("a statement sent again answers alike, with its parameters' values", async () => {
    for (const value of [1, 2, 3, 4, 5, 6, 7, 8]) {
      const { rows } = await sql<{ doubled: number; text: string }>`
        select ${value}::int * 2 as doubled, ${`v${value}`}::text as text`.execute(db);
      expect(rows).toEqual([{ doubled: value * 2, text: `v${value}` }]);
    }
  });

  test("a table changed under a kept statement: the statement answers with the table as it is now", async () => {
    await sql`create table shapes (a int)`.execute(db);
    await sql`insert into shapes values (1)`.execute(db);
    const read = () => sql`select * from shapes`.execute(db);
    expect((await read()).rows).toEqual([{ a: 1 }]);
    await sql`alter table shapes add column b int default 7`.execute(db);
    expect((await read()).rows).toEqual([{ a: 1, b: 7 }]);
  });

  test("a statement that failed, in a transaction or outside one, does not fail the next", async () => {
    const divide = (by: number) => sql<{ q: number }>`select 10 / ${by}::int as q`.execute(db);
    await expect(
      db.transaction().execute(async (trx) => {
        await sql`select 1`.execute(trx);
        await sql`select 10 / ${0}::int as q`.execute(trx);
      }),
    ).rejects.toThrow("division by zero");
    expect((await divide(5)).rows).toEqual([{ q: 2 }]);
    await expect(divide(0)).rejects.toThrow("division by zero");
    expect((await divide(2)).rows).toEqual([{ q: 5 }]);
    // Never prepared: said again as it was the first time.
    for (let n = 0; n < 2; n++)
      await expect(sql`selec 1`.execute(db)).rejects.toThrow('syntax error at or near "selec"');
    expect((await sql<{ three: number }>`select 3 as three`.execute(db)).rows).toEqual([{ three: 3 }]);
  });

  test("rows read as PGlite's own query reads them, and an error carries the server's fields", async () => {
    await sql`create table records (id int primary key, name text, data jsonb, raw bytea, at timestamptz)`.execute(db);
    const data = { note: "é ünïcode ✓ 𝄞", items: Array.from({ length: 200 }, (_, n) => n) };
    for (let id = 1; id <= 40; id++) {
      const name = id % 3 === 0 ? null : `record ${id} ${"x".repeat(id * 50)}`;
      await sql`insert into records values (${id}, ${name}, ${JSON.stringify(data)}, ${Buffer.from([0, id, 255])}, ${new Date(Date.UTC(2026, 10, id % 28))})`.execute(
        db,
      );
    }
    const text = "select * from records order by id";
    const ours = (await sql.raw(text).execute(db)).rows;
    expect(ours).toHaveLength(40);
    expect(ours).toEqual((await pglite.query(text)).rows as never);
    expect(ours[0]).toMatchObject({ id: 1, data, raw: new Uint8Array([0, 1, 255]) });

    const again = sql`insert into records (id) values (${1})`.execute(db);
    await expect(again).rejects.toMatchObject({
      code: "23505",
      constraint: "records_pkey",
      detail: "Key (id)=(1) already exists.",
      table: "records",
    });
  });

  test("at most 256 statements are kept, the least recently used let go of first", async () => {
    for (let n = 0; n < 600; n++) await sql.raw(`select ${n} as n`).execute(db);
    expect(await kept()).toBe(256);
    expect((await sql.raw<{ n: number }>("select 599 as n").execute(db)).rows).toEqual([{ n: 599 }]);
  });
});
