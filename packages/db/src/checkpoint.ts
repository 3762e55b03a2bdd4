import { type Kysely, sql } from "kysely";
import type { Database } from "./schema.ts";

/**
 * When a checkpoint is due, as PostgreSQL's checkpointer judges it: `checkpoint_timeout`
 * since the last one, or as much WAL written since its redo point as `max_wal_size /
 * (1 + checkpoint_completion_target)` (the server's `CheckPointSegments`).
 */
export interface CheckpointLimits {
  seconds: number;
  walBytes: number;
}

export interface Checkpointed {
  /** WAL written since the checkpoint before, in bytes. */
  walBytes: number;
  ms: number;
}

/** The server's own limits (`checkpointIfDue`). */
export async function checkpointLimits(db: Kysely<Database>): Promise<CheckpointLimits> {
  const { rows } = await sql<CheckpointLimits>`
    select extract(epoch from current_setting('checkpoint_timeout')::interval)::float8 as seconds,
      pg_size_bytes(current_setting('max_wal_size'))::float8
        / (1 + current_setting('checkpoint_completion_target')::float8) as "walBytes"`.execute(db);
  return rows[0] as CheckpointLimits;
}

/**
 * A checkpoint, for a database that makes none by itself, once `limits` say it is due; null
 * when it is not. PGlite is PostgreSQL in one process, with no checkpointer: left alone, it
 * keeps every WAL segment it writes until it is closed (its data directory grew by 1.5 KB a
 * gateway request, 7.5 MB a second under bench load, past 1.5 GB in 200 s), a process that
 * dies replays all of it when it starts again (673 MB: a second more), and every segment is
 * a new file, which PostgreSQL fills with zeros before its first record (16 MB held PGlite's
 * thread 100–200 ms every few seconds under load: `wal_init_zero` is off for PGlite, see
 * connection.ts). A checkpoint lets the segments before its redo point go: PostgreSQL renames
 * them to be the next ones (`wal_recycle`), up to about what a checkpoint's interval writes,
 * and deletes the rest, so the WAL stays within about `max_wal_size` (under the same load,
 * 625 MB from the first checkpoint on).
 *
 * In PGlite a checkpoint holds the process's one thread while it writes the pages changed
 * since the one before (110–130 ms after 330 MB of WAL, 3 ms with none), as a VACUUM does.
 */
export async function checkpointIfDue(db: Kysely<Database>, limits: CheckpointLimits): Promise<Checkpointed | null> {
  const { rows } = await sql<{ seconds: number; walBytes: number }>`
    select extract(epoch from now() - checkpoint_time)::float8 as seconds,
      pg_wal_lsn_diff(pg_current_wal_lsn(), redo_lsn)::float8 as "walBytes"
    from pg_control_checkpoint()`.execute(db);
  const since = rows[0];
  if (!since || (since.seconds < limits.seconds && since.walBytes < limits.walBytes)) return null;
  const started = performance.now();
  await sql`checkpoint`.execute(db);
  return { walBytes: since.walBytes, ms: performance.now() - started };
}
