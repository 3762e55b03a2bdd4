import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { PGlite } from "@electric-sql/pglite";
import { CompiledQuery, Kysely, sql } from "kysely";
import { pgliteDialect, pgliteSession } from "./pglite-statements.ts";

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

/** A write that shares the next statement's commit (the embedded rate limiter's record, on a gateway's path). */
describe("a write committed with the next statement, on PGlite", () => {
  const pglite = new PGlite();
  const session = pgliteSession(pglite);
  const db = new Kysely<Record<string, never>>({ dialect: session.dialect });
  afterAll(() => db.destroy());
  const write = (text: string) => session.commitWithNext(CompiledQuery.raw(text));
  /** The transaction that wrote each row of `notes`, by its text. */
  const writers = async () =>
    Object.fromEntries(
      (await sql<{ note: string; xmin: string }>`select note, xmin::text from notes`.execute(db)).rows.map((row) => [
        row.note,
        row.xmin,
      ]),
    );

  beforeAll(async () => {
    await sql`create table notes (note text primary key)`.execute(db);
  });
  beforeEach(async () => {
    await sql`delete from notes`.execute(db);
  });

  test("the write is made in the transaction of the statement sent next, in the same turn", async () => {
    const written = write("insert into notes values ('rider')");
    const host = sql`insert into notes values ('host')`.execute(db);
    await Promise.all([host, written]);
    const by = await writers();
    expect(by.rider).toBeDefined();
    expect(by.rider).toBe(by.host);
  });

  test("with no statement sent in its turn, the write is made alone", async () => {
    await write("insert into notes values ('alone')");
    const later = sql`insert into notes values ('later')`.execute(db);
    await later;
    const by = await writers();
    expect(Object.keys(by).toSorted()).toEqual(["alone", "later"]);
    expect(by.alone).not.toBe(by.later);
  });

  test("a write that fails fails alone: the statement it rode with is made", async () => {
    const written = write("insert into notes values (1 / 0)");
    const host = sql`insert into notes values ('host')`.execute(db);
    await expect(written).rejects.toThrow("division by zero");
    await host;
    expect(Object.keys(await writers())).toEqual(["host"]);
  });

  test("a statement that fails fails alone: the write that rode with it is made", async () => {
    await sql`insert into notes values ('taken')`.execute(db);
    const written = write("insert into notes values ('rider')");
    const host = sql`insert into notes values ('taken')`.execute(db);
    await expect(host).rejects.toMatchObject({ code: "23505" });
    await written;
    expect(Object.keys(await writers()).toSorted()).toEqual(["rider", "taken"]);
  });

  test("a statement that cannot run in a transaction takes no write along; the write is made when it is answered", async () => {
    const written = write("insert into notes values ('after vacuum')");
    const vacuum = sql`vacuum notes`.execute(db);
    await Promise.all([vacuum, written]);
    expect(Object.keys(await writers())).toEqual(["after vacuum"]);
  });
});
