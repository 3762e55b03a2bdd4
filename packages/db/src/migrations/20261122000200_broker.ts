import { type Kysely, sql } from "kysely";

/**
 * Tables of the PostgreSQL broker adapter (streams with consumer groups, KV, counters,
 * rate limits). Every table carries the `scope` (account id or platform scope).
 * Names and keys are compared byte-wise (`collate "C"`) so listings page the same on
 * every server locale and on PGlite.
 *
 * Indexes are few on purpose: PGlite never gathers statistics, and with none the
 * planner cannot tell two indexes with the same leading columns apart (an index on
 * `(scope, stream, created_at)` once won over the primary key for lookups by id,
 * scanning a whole stream per foreign-key check).
 */
export async function up(db: Kysely<any>): Promise<void> {
  // One row per stream: `last_id` hands out entry ids. Appending locks this row until
  // commit, so entries of a stream become visible in id order and a group's cursor
  // (`last_delivered_id`) never passes an entry that is still being written.
  await sql`
    create table broker_streams (
      scope text collate "C" not null,
      stream text collate "C" not null,
      last_id bigint not null default 0,
      primary key (scope, stream)
    )`.execute(db);

  await sql`
    create table broker_stream_entries (
      scope text collate "C" not null,
      stream text collate "C" not null,
      id bigint not null,
      payload text not null,
      created_at timestamptz not null default clock_timestamp(),
      primary key (scope, stream, id),
      foreign key (scope, stream) references broker_streams (scope, stream) on delete cascade
    )`.execute(db);

  await sql`
    create table broker_stream_groups (
      scope text collate "C" not null,
      stream text collate "C" not null,
      group_name text collate "C" not null,
      last_delivered_id bigint not null,
      primary key (scope, stream, group_name),
      foreign key (scope, stream) references broker_streams (scope, stream) on delete cascade
    )`.execute(db);

  // Entries handed to a group member and not yet acknowledged. Trimming an entry
  // drops it from every pending list.
  await sql`
    create table broker_stream_pending (
      scope text collate "C" not null,
      stream text collate "C" not null,
      group_name text collate "C" not null,
      entry_id bigint not null,
      consumer text not null,
      delivered_at timestamptz not null,
      deliveries integer not null,
      primary key (scope, stream, group_name, entry_id),
      foreign key (scope, stream, group_name) references broker_stream_groups (scope, stream, group_name) on delete cascade,
      foreign key (scope, stream, entry_id) references broker_stream_entries (scope, stream, id) on delete cascade
    )`.execute(db);
  await sql`
    create index broker_stream_pending_idle on broker_stream_pending (scope, stream, group_name, delivered_at)`.execute(
    db,
  );

  await sql`create sequence broker_kv_revision`.execute(db);
  await sql`
    create table broker_kv (
      scope text collate "C" not null,
      bucket text collate "C" not null,
      key text collate "C" not null,
      value text not null,
      revision bigint not null,
      modified_at timestamptz not null,
      expires_at timestamptz,
      primary key (scope, bucket, key)
    )`.execute(db);
  await sql`create index broker_kv_expiry on broker_kv (expires_at) where expires_at is not null`.execute(db);

  await sql`
    create table broker_counters (
      scope text collate "C" not null,
      name text collate "C" not null,
      value bigint not null,
      primary key (scope, name)
    )`.execute(db);

  // Sliding-window limiter: the times (epoch ms) of the calls allowed in the current window.
  await sql`
    create table broker_rate_limits (
      scope text collate "C" not null,
      key text collate "C" not null,
      hits double precision[] not null,
      expires_at timestamptz not null,
      primary key (scope, key)
    )`.execute(db);
  await sql`create index broker_rate_limits_expiry on broker_rate_limits (expires_at)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of [
    "broker_rate_limits",
    "broker_counters",
    "broker_kv",
    "broker_stream_pending",
    "broker_stream_groups",
    "broker_stream_entries",
    "broker_streams",
  ]) {
    await sql`drop table if exists ${sql.table(table)}`.execute(db);
  }
  await sql`drop sequence if exists broker_kv_revision`.execute(db);
}
