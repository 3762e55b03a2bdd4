import { type Kysely, sql } from "kysely";

/**
 * Per-flow throttles: a flow (and each revision) may say how many of its runs start per
 * period, per key. A run of such a flow is given its turn once (`throttle_at`, under its key
 * `throttle_key`), spaced from the turns given before it; the turn `limit` back is read from
 * a partial index, which holds runs of throttled flows only.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table flows add column throttle jsonb`.execute(db);
  await sql`alter table flow_revisions add column throttle jsonb`.execute(db);
  await sql`alter table runs add column throttle_key text, add column throttle_at timestamptz`.execute(db);
  await sql`
    create index runs_throttle on runs (flow_id, throttle_key, throttle_at)
    where throttle_at is not null`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table runs drop column throttle_key, drop column throttle_at`.execute(db);
  await sql`alter table flow_revisions drop column throttle`.execute(db);
  await sql`alter table flows drop column throttle`.execute(db);
}
