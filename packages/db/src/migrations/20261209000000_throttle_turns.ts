import { type Kysely, sql } from "kysely";

/**
 * A throttled key's turns get a table of their own (`throttle_turns`), read by
 * `throttle_take` instead of the runs that hold them. Found on `runs`, a key's latest turn
 * and the turn `limit` numbers back were two lookups in every day partition's turn index per
 * turn given (a key's latest turn may belong to a run accepted long ago, so no id bound
 * prunes them), and a throttled flow on a deployment with a month's partitions (33)
 * completed 40% fewer runs than on one with a week's (bench/runs.ts). Here each is one
 * lookup in one index, however many partitions there are.
 *
 * The table keeps what a turn can still be judged by: giving a turn removes the key's turns
 * `limit` or more numbers back (the `limit`-th latest is the one a new turn is judged by; a
 * revision that raises the limit finds the older ones more than a period before the latest,
 * so they would not hold a turn back), and run retention removes turns a day past (the
 * longest period), so a key no run has used for a day leaves nothing behind. A key whose
 * turns are all gone numbers its turns from 1 again. Runs keep their turn (`throttle_key`,
 * `throttle_at`, `throttle_seq`) as before: a run given its turn keeps it. The turns given
 * in the last day are copied in.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table throttle_turns (
      flow_id uuid not null,
      throttle_key text not null,
      seq bigint not null,
      at timestamptz not null,
      primary key (flow_id, throttle_key, seq)
    )`.execute(db);
  await sql`create index throttle_turns_at on throttle_turns (at)`.execute(db);
  await sql`
    insert into throttle_turns (flow_id, throttle_key, seq, at)
    select flow_id, throttle_key, throttle_seq, throttle_at from runs
    where throttle_seq is not null and throttle_at > now() - interval '1 day'`.execute(db);
  await sql`drop index runs_throttle_turns`.execute(db);
  await sql`
    create or replace function throttle_take(p_starts jsonb, p_waiting text)
    returns table (id uuid, due boolean)
    language plpgsql set plan_cache_mode = force_generic_plan as $$
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
        select t.seq, t.at into latest_seq, latest_at from throttle_turns as t
        where t.flow_id = s.flow and t.throttle_key = s.key
        order by t.seq desc limit 1;
        -- The turn \`limit\` back frees a place one period after it (GREATEST passes over a null: none yet).
        freed := (select t.at + s.period_ms * interval '1 millisecond' from throttle_turns as t
          where t.flow_id = s.flow and t.throttle_key = s.key and t.seq = coalesce(latest_seq, 0) + 1 - s.lim);
        return query
          with turn as (
            select given.at, given.seq, given.fresh, given.at <= given.now as due from (
              select coalesce(r.throttle_at, greatest(clock_timestamp(), freed, latest_at)) as at,
                coalesce(r.throttle_seq, coalesce(latest_seq, 0) + 1) as seq,
                r.throttle_seq is null as fresh,
                clock_timestamp() as now
              from runs as r where r.id = s.run and r.held_by = s.holder) as given
          ),
          updated as (
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
            returning runs.id, turn.due, turn.at, turn.seq, turn.fresh
          ),
          recorded as (
            insert into throttle_turns (flow_id, throttle_key, seq, at)
            select s.flow, s.key, g.seq, g.at from updated as g where g.fresh
          ),
          -- Run in the same snapshot as the insert, so it never sees (or removes) the new turn.
          forgotten as (
            delete from throttle_turns as t
            where t.flow_id = s.flow and t.throttle_key = s.key
              and t.seq <= (select g.seq - s.lim from updated as g where g.fresh)
          )
          select g.id, g.due from updated as g;
      end loop;
    end $$`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    create index runs_throttle_turns on runs (flow_id, throttle_key, throttle_seq)
    where throttle_seq is not null`.execute(db);
  // The function as the run_throttle_turn_numbers migration made it, reading the turns on runs.
  await sql`
    create or replace function throttle_take(p_starts jsonb, p_waiting text)
    returns table (id uuid, due boolean)
    language plpgsql set plan_cache_mode = force_generic_plan as $$
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
  await sql`drop table throttle_turns`.execute(db);
}
