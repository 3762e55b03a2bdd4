import { type Kysely, sql } from "kysely";

/**
 * Tallies of the starts a flow's rate limit took, per key and slice of acceptance time, so
 * that judging a start no longer counts the taken starts of its window one by one. The count
 * (packages/core/src/engine/rate-limit.ts) read every taken start of the key accepted within
 * a period of the judged one, up to `limit` of them, under the key's lock: a limit of 100,000
 * starts a second on a flow taking 2,600 a second read 5,000 index entries per start, and
 * held the flow to 190 starts a second.
 *
 * A key's tally (`rate_limit_tallies`) cuts acceptance time into buckets of `width_ms` (a
 * 64th of the period it was made for) and counts the starts taken per bucket
 * (`rate_limit_tally_buckets`). It is complete from `since_bucket` on: every start taken with
 * an acceptance time in that bucket or a later one is counted. A window's count is then the
 * sum of its buckets wholly inside it and at or after `since_bucket`, and the starts of the
 * rest of it (its two ends, less than a bucket each, and all of it before `since_bucket`)
 * counted one by one as before. `rate_limit_judge` judges a batch of starts so, in order, in
 * one statement under their keys' locks (the advisory transaction locks of
 * `rate_limit/<flow>/<key>`), adding each start it takes to its bucket; the statement that
 * calls it makes them keep their key.
 *
 * A tally is made (and made again, for a period more than twice or less than half the one it
 * was made for) complete from the bucket after the latest acceptance of a start the key took:
 * those are counted one by one until they leave the window. As a tally's buckets fall three
 * periods behind the starts judged, they go, and `since_bucket` moves past them; housekeeping
 * removes tallies with no bucket in the last 256 widths (four periods).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table rate_limit_tallies (
      id bigint generated always as identity primary key,
      flow_id uuid not null references flows (id) on delete cascade,
      rate_key text collate "C" not null,
      width_ms bigint not null check (width_ms > 0),
      since_bucket bigint not null,
      unique (flow_id, rate_key)
    )`.execute(db);
  await sql`
    create table rate_limit_tally_buckets (
      tally_id bigint not null references rate_limit_tallies (id) on delete cascade,
      bucket bigint not null,
      taken integer not null,
      primary key (tally_id, bucket)
    )`.execute(db);

  // The first run id of a millisecond (a UUIDv7's time, then the smallest rest: firstIdAt in
  // run-partitions.ts). One expression, so the planner inlines it: called as a function, it
  // was planned again at each call, a tenth of a millisecond each.
  await sql`
    create function first_run_id_at(p_ms bigint) returns uuid language sql immutable as $$
      select (overlay(lpad(to_hex(greatest(p_ms, 0)), 12, '0') placing '-' from 9 for 0) || '-7000-8000-000000000000')::uuid
    $$`.execute(db);
  // A UUIDv7's millisecond (idTime in run-partitions.ts).
  await sql`
    create function run_id_ms(p_id uuid) returns bigint language sql immutable strict as $$
      select ('x' || translate(left(p_id::text, 13), '-', ''))::bit(48)::bigint
    $$`.execute(db);

  await sql`
    create function rate_limit_judge(p_starts jsonb)
    returns table (id uuid, holder text, key text, admit boolean, reason text) language plpgsql as $$
    #variable_conflict use_column
    declare
      s record;
      r record;
      t record;
      lock_name text;
      ideal bigint;
      lo bigint;
      hi bigint;
      exact_end bigint;
      exact_again bigint;
      tallied bigint;
      one_by_one bigint;
      mine_locks text[] := '{}';
      mine_at bigint[] := '{}';
    begin
      -- Every key's lock, in one order in every process, so that two calls never wait for each
      -- other in a circle; held until commit, so each statement below sees every decision of
      -- these keys made before.
      perform pg_advisory_xact_lock(l.k) from (
        select distinct hashtext('rate_limit/' || (e->>'flow')::uuid || '/' || (e->>'key')) as k
        from jsonb_array_elements(p_starts) as e order by 1) as l;
      for s in
        select * from jsonb_to_recordset(p_starts)
          as x(run uuid, holder text, flow uuid, key text, at bigint, period bigint, lim integer, reason text)
      loop
        select rate_key, held_by into r from runs where runs.id = s.run for update;
        continue when not found or r.held_by is distinct from s.holder;
        id := s.run; holder := s.holder; key := s.key; reason := s.reason;
        if r.rate_key is not null then
          admit := true;
          return next;
          continue;
        end if;
        lock_name := 'rate_limit/' || s.flow || '/' || s.key;
        ideal := greatest(1, s.period / 64);
        lo := s.at - s.period + 1;
        hi := s.at + s.period;

        select g.id, g.width_ms, g.since_bucket into t from rate_limit_tallies as g
        where g.flow_id = s.flow and g.rate_key = s.key
        for key share;
        if not found or t.width_ms > ideal * 2 or t.width_ms * 2 < ideal then
          -- Complete from after every start of the key taken so far, in the database or by this call.
          insert into rate_limit_tallies as g (flow_id, rate_key, width_ms, since_bucket)
          select s.flow, s.key, ideal, greatest(s.at,
              coalesce(run_id_ms((
                select o.id from runs as o where o.flow_id = s.flow and o.rate_key = s.key order by o.id desc limit 1)), 0),
              coalesce((select max(a) from unnest(mine_locks, mine_at) as m(l, a) where l = lock_name), 0))
            / ideal + 1
          on conflict (flow_id, rate_key) do update set width_ms = excluded.width_ms, since_bucket = excluded.since_bucket
          returning g.id, g.width_ms, g.since_bucket into t;
          delete from rate_limit_tally_buckets as b where b.tally_id = t.id;
        elsif (s.at - 3 * s.period) / t.width_ms > t.since_bucket + 256 then
          update rate_limit_tallies as g set since_bucket = (s.at - 3 * s.period) / t.width_ms where g.id = t.id
          returning g.id, g.width_ms, g.since_bucket into t;
          delete from rate_limit_tally_buckets as b where b.tally_id = t.id and b.bucket < t.since_bucket;
        end if;

        -- Buckets from the first wholly inside [lo, hi) and complete to the last wholly inside
        -- are summed; the starts of [lo, exact_end) and [exact_again, hi) are counted one by one.
        exact_end := greatest(t.since_bucket, (lo + t.width_ms - 1) / t.width_ms) * t.width_ms;
        exact_again := hi / t.width_ms * t.width_ms;
        if exact_end < exact_again then
          select coalesce(sum(b.taken), 0) into tallied from rate_limit_tally_buckets as b
          where b.tally_id = t.id and b.bucket >= exact_end / t.width_ms and b.bucket < exact_again / t.width_ms;
        else
          tallied := 0;
          exact_end := hi;
          exact_again := hi;
        end if;
        one_by_one := (select count(*) from (
            select 1 from runs as o
            where o.flow_id = s.flow and o.rate_key = s.key and o.id <> s.run
              and o.id >= first_run_id_at(lo) and o.id < first_run_id_at(exact_end)
            limit greatest(s.lim - tallied, 0)) as counted)
          + (select count(*) from (
            select 1 from runs as o
            where o.flow_id = s.flow and o.rate_key = s.key and o.id <> s.run
              and o.id >= first_run_id_at(exact_again) and o.id < first_run_id_at(hi)
            limit greatest(s.lim - tallied, 0)) as counted)
          -- This call's own starts: in their buckets already, not yet keeping their key.
          + (select count(*) from unnest(mine_locks, mine_at) as m(l, a)
            where l = lock_name and ((a >= lo and a < exact_end) or (a >= exact_again and a < hi)));
        admit := tallied + one_by_one < s.lim;
        if admit then
          insert into rate_limit_tally_buckets as b (tally_id, bucket, taken) values (t.id, s.at / t.width_ms, 1)
          on conflict (tally_id, bucket) do update set taken = b.taken + 1;
          mine_locks := mine_locks || lock_name;
          mine_at := mine_at || s.at;
        end if;
        return next;
      end loop;
    end $$`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop function rate_limit_judge`.execute(db);
  await sql`drop function run_id_ms`.execute(db);
  await sql`drop function first_run_id_at`.execute(db);
  await sql`drop table rate_limit_tally_buckets`.execute(db);
  await sql`drop table rate_limit_tallies`.execute(db);
}
