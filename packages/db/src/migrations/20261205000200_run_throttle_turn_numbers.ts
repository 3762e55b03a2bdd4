import { type Kysely, sql } from "kysely";

/**
 * A throttled run's turn is numbered (`throttle_seq`, 1, 2, … per flow and key), so that the
 * turn `limit` places back is found by its number instead of by skipping `limit - 1` turns of
 * the key: `offset limit - 1` read up to `limit` entries of the key's index per turn given,
 * under the key's lock, and a flow throttled to 100,000 runs a second completed 143 runs a
 * second against 2,636 without the throttle (bench/runs.ts). Turns are given in the order of
 * their times (engine/throttle.ts), so the turn `limit` numbers back is the one `limit`
 * places back. The turns given before this migration are numbered in the order of their
 * times; the index of turns by time is no longer read, and goes.
 *
 * `throttle_take` gives the starts a worker takes together their turns in one statement, as
 * rate limits and singletons judge theirs (the rate_limit_tallies migration): a key's lock
 * lasts until commit, and a transaction per start made every start of a key wait for the WAL
 * flush of the one before. It takes the starts' keys' locks (the advisory transaction locks
 * of `throttle/<flow>/<key>`) in one order, then gives each start held by its holder its turn,
 * in order, as engine/throttle.ts says: now, or one period after the turn `limit` numbers
 * back, and never before the key's latest turn; a start given its turn before keeps it.
 * `p_waiting` is the queue reason of a run whose turn lies ahead.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table runs add column throttle_seq bigint`.execute(db);
  await sql`
    update runs as r set throttle_seq = numbered.seq
    from (
      select id, row_number() over (partition by flow_id, throttle_key order by throttle_at, id) as seq
      from runs where throttle_at is not null) as numbered
    where r.id = numbered.id`.execute(db);
  await sql`drop index runs_throttle`.execute(db);
  await sql`
    create index runs_throttle_turns on runs (flow_id, throttle_key, throttle_seq)
    where throttle_seq is not null`.execute(db);
  await sql`
    create function throttle_take(p_starts jsonb, p_waiting text)
    returns table (id uuid, due boolean) language plpgsql as $$
    #variable_conflict use_column
    declare
      s record;
      latest_seq bigint;
      latest_at timestamptz;
      freed timestamptz;
    begin
      perform pg_advisory_xact_lock(l.k) from (
        select distinct hashtext('throttle/' || (e->>'flow')::uuid || '/' || (e->>'key')) as k
        from jsonb_array_elements(p_starts) as e order by 1) as l;
      for s in
        select * from jsonb_to_recordset(p_starts) as x(run uuid, holder text, flow uuid, key text, lim integer, period_ms integer)
      loop
        latest_seq := null;
        latest_at := null;
        select t.throttle_seq, t.throttle_at into latest_seq, latest_at from runs as t
        where t.flow_id = s.flow and t.throttle_key = s.key and t.throttle_seq is not null
        order by t.throttle_seq desc limit 1;
        -- The turn \`limit\` back frees a place one period after it (GREATEST passes over a null: none yet).
        freed := (select t.throttle_at + s.period_ms * interval '1 millisecond' from runs as t
          where t.flow_id = s.flow and t.throttle_key = s.key and t.throttle_seq = coalesce(latest_seq, 0) + 1 - s.lim);
        return query
          with turn as (
            select given.at, given.seq, given.at <= given.now as due from (
              select coalesce(r.throttle_at, greatest(clock_timestamp(), freed, latest_at)) as at,
                coalesce(r.throttle_seq, coalesce(latest_seq, 0) + 1) as seq,
                clock_timestamp() as now
              from runs as r where r.id = s.run and r.held_by = s.holder) as given
          )
          update runs set
            throttle_key = s.key,
            throttle_at = turn.at,
            throttle_seq = turn.seq,
            queue_reason = case
              when not turn.due then p_waiting
              when runs.queue_reason = p_waiting then null
              else runs.queue_reason end,
            held_by = case when turn.due then runs.held_by end,
            wake_at = case when turn.due then runs.wake_at else turn.at end,
            status = case when turn.due or exists (select 1 from run_steps where run_id = runs.id) then runs.status
              else 'queued' end,
            started_at = case when turn.due or exists (select 1 from run_steps where run_id = runs.id) then runs.started_at
              end
          from turn
          where runs.id = s.run and runs.held_by = s.holder
          returning runs.id, turn.due;
      end loop;
    end $$`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop function throttle_take`.execute(db);
  await sql`drop index runs_throttle_turns`.execute(db);
  await sql`create index runs_throttle on runs (flow_id, throttle_key, throttle_at) where throttle_at is not null`.execute(
    db,
  );
  await sql`alter table runs drop column throttle_seq`.execute(db);
}
