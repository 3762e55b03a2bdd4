import { type Kysely, sql } from "kysely";

/**
 * Definitions of an account's storage streams and KV buckets: names, descriptions and
 * retention limits. Their contents (messages, keys) live in the Broker, under the
 * account's scope and the row's `id`, so a stream or bucket deleted and created again
 * under the same name starts empty and never meets a straggling write to the old one.
 * Names are unique per account and compared byte-wise (`collate "C"`).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table storage_streams (
      account_id text not null references accounts (id) on delete cascade,
      name text collate "C" not null,
      id text not null,
      description text not null,
      max_messages integer,
      max_age_s integer,
      created_at timestamptz not null default now(),
      modified_at timestamptz not null default now(),
      primary key (account_id, name)
    )`.execute(db);

  await sql`
    create table storage_kv_buckets (
      account_id text not null references accounts (id) on delete cascade,
      name text collate "C" not null,
      id text not null,
      description text not null,
      created_at timestamptz not null default now(),
      modified_at timestamptz not null default now(),
      primary key (account_id, name)
    )`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table if exists storage_kv_buckets`.execute(db);
  await sql`drop table if exists storage_streams`.execute(db);
}
