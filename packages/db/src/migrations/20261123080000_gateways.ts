import { type Kysely, sql } from "kysely";

/**
 * Gateways: public HTTP addresses (`{gateway_url}` = GATEWAY_BASE_URL/<subject>) whose
 * mappings (method + path) run flows. A gateway's subject (its topic) names it in every
 * URL, so it is unique across accounts and stays reserved after the gateway is deleted:
 * an address once handed out never starts serving another account. Deleting marks rows
 * (`deleted_at`) rather than removing them.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table gateways (
      id uuid primary key,
      account_id text not null references accounts (id) on delete cascade,
      subject text collate "C" not null unique,
      name text not null,
      description text not null,
      active boolean not null,
      timeout_ms integer not null,
      limit_requests integer not null,
      limit_seconds integer not null,
      type text not null,
      created_at timestamptz not null default now(),
      modified_at timestamptz not null default now(),
      deleted_at timestamptz,
      constraint gateways_limits_positive check (timeout_ms > 0 and limit_requests > 0 and limit_seconds > 0)
    )`.execute(db);
  await sql`create index gateways_account_created on gateways (account_id, created_at, id) where deleted_at is null`.execute(
    db,
  );

  // `route` is the path with every parameter written as ":" (`/orders/:`), so that
  // `/orders/:id` and `/orders/:key` count as the same route of a method.
  await sql`
    create table gateway_mappings (
      id uuid primary key,
      gateway_id uuid not null references gateways (id) on delete cascade,
      account_id text not null references accounts (id) on delete cascade,
      method text not null,
      path text collate "C" not null,
      route text collate "C" not null,
      flow_id uuid not null references flows (id) on delete cascade,
      created_at timestamptz not null default now(),
      deleted_at timestamptz
    )`.execute(db);
  await sql`create unique index gateway_mappings_live_route on gateway_mappings (gateway_id, method, route) where deleted_at is null`.execute(
    db,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table if exists gateway_mappings`.execute(db);
  await sql`drop table if exists gateways`.execute(db);
}
