import { type Kysely, sql } from "kysely";

/**
 * The embedded limiter's record of the calls it allowed, a row per key and turn of the event
 * loop (broker/postgres/single-process-limiter.ts). It rewrote a key's whole window in
 * `broker_rate_limits` at every turn: a gateway taking 2,000 calls a second with a one-second
 * window wrote its 2,000 hits, a 16 KB array, hundreds of times a second. A turn now adds the
 * calls it allowed, and a key's rows are folded into one every 64 turns, so a write costs
 * what its turn allowed and a key keeps at most 65 rows.
 *
 * `broker_rate_limits` stays: the locked-row limiter of a PostgreSQL server keeps its window
 * there, and the embedded limiter reads a key's row from it as well, which a process before
 * this migration wrote, until the key's first fold deletes it.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table broker_rate_limit_turns (
      scope text collate "C" not null,
      key text collate "C" not null,
      hits double precision[] not null,
      expires_at timestamptz not null
    )`.execute(db);
  await sql`create index broker_rate_limit_turns_key on broker_rate_limit_turns (scope, key)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table broker_rate_limit_turns`.execute(db);
}
