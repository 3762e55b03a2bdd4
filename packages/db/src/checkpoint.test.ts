import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "kysely";
import { checkpointIfDue, checkpointLimits } from "./checkpoint.ts";
import { type DatabaseHandle, openDatabase } from "./connection.ts";

describe("checkpoints of PGlite, which has no checkpointer", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "pglite-checkpoint-"));
  let handle: DatabaseHandle;

  beforeAll(async () => {
    handle = await openDatabase({ kind: "pglite", dataDir });
    await sql`create table filler (id serial primary key, body text)`.execute(handle.db);
  }, 60_000);
  afterAll(async () => {
    await handle.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** About `megabytes` of WAL: rows of 1 KB. */
  const writeWal = (megabytes: number) =>
    sql`insert into filler (body) select repeat('x', 1000) from generate_series(1, ${megabytes * 1000})`.execute(
      handle.db,
    );
  /** The WAL segment files in the data directory, by name (their order is the WAL's). */
  const segments = () =>
    readdirSync(join(dataDir, "pg_wal"))
      .filter((name) => /^[0-9A-F]{24}$/.test(name))
      .sort();
  const redoSegment = async () =>
    (await sql<{ name: string }>`select redo_wal_file as name from pg_control_checkpoint()`.execute(handle.db)).rows[0]
      ?.name as string;

  test("are due by the server's own settings: checkpoint_timeout, and max_wal_size spread as its checkpointer spreads it", async () => {
    expect(await checkpointLimits(handle.db)).toEqual({ seconds: 300, walBytes: (1024 * 1024 * 1024) / 1.9 });
  });

  test("left alone, the WAL keeps every segment written; a checkpoint due lets those before it go, and none is due right after", async () => {
    const limits = { seconds: 3600, walBytes: 24 * 1024 * 1024 };
    const first = segments()[0] as string;
    await writeWal(40);
    expect(segments()[0]).toBe(first);
    expect(segments().length).toBeGreaterThanOrEqual(3);

    const made = await checkpointIfDue(handle.db, limits);
    expect(made?.walBytes).toBeGreaterThan(limits.walBytes);
    const redo = await redoSegment();
    expect(redo > first).toBe(true);
    expect(segments().filter((name) => name < redo)).toEqual([]);
    expect(await checkpointIfDue(handle.db, limits)).toBeNull();

    await writeWal(8);
    expect(await checkpointIfDue(handle.db, limits)).toBeNull();
    expect(await checkpointIfDue(handle.db, { seconds: 0, walBytes: limits.walBytes })).not.toBeNull();
  }, 60_000);

  test("a new segment is not filled with zeros before its first record", async () => {
    const { rows } = await sql<{ setting: string }>`select current_setting('wal_init_zero') as setting`.execute(
      handle.db,
    );
    expect(rows[0]?.setting).toBe("off");
  });
});
