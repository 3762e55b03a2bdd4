import { type Kysely, sql } from "kysely";

/**
 * A flow's debounce judges the starts a worker takes together in one statement
 * (packages/core/src/engine/debounce.ts), as rate limits and singletons do: each start was
 * judged in a transaction of its own (its key's lock, the run and its key's waiting run
 * read, the park or the replacement, the commit), five round trips from a worker whose event
 * loop is busy with the runs it executes, twice a run (when it parks, and when it is woken).
 * Under 800 starts a second of one-second debounces the worker judged about 600 a second,
 * and the runs waited 14 s (p50) for their second of quiet.
 *
 * `debounce_judge` takes the starts' keys' locks (the advisory transaction locks of
 * `debounce/<flow>/<key>`) in one order, then judges each start in order, as debounce.ts
 * describes, each seeing what the ones before it wrote. A start its holder no longer holds
 * is answered `goes_on` false and left as it is. Answers, for each start judged, whether it
 * goes on, and the run it ended `skipped` (`p_reason`), if any, with whom to tell.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create function debounce_due(p_created timestamptz, p_since timestamptz, p_period_ms integer, p_timeout_ms integer)
    returns timestamptz language sql stable as $$
      select case when p_timeout_ms is null then p_created + p_period_ms * interval '1 millisecond'
        else least(p_created + p_period_ms * interval '1 millisecond', p_since + p_timeout_ms * interval '1 millisecond') end
    $$`.execute(db);
  await sql`
    create function debounce_judge(p_starts jsonb, p_reason text)
    returns table (run uuid, goes_on boolean, ended uuid, ended_waiter text, ended_parent uuid)
    language plpgsql set plan_cache_mode = force_generic_plan as $$
    #variable_conflict use_column
    declare
      s record;
      o record;
      w record;
      began timestamptz;
      park_since timestamptz;
      level uuid[];
    begin
      perform pg_advisory_xact_lock(l.k) from (
        select distinct hashtext('debounce/' || (e->>'flow')::uuid || '/' || (e->>'key')) as k
        from jsonb_array_elements(p_starts) as e order by 1) as l;
      for s in
        select * from jsonb_to_recordset(p_starts) as x(run uuid, holder text, flow uuid, key text, period_ms integer,
          timeout_ms integer)
      loop
        run := s.run; goes_on := false; ended := null; ended_waiter := null; ended_parent := null; park_since := null;
        select r.created_at, r.debounce_since, r.queue_reason is not distinct from 'debounce' as waiting into o
        from runs as r where r.id = s.run and r.held_by = s.holder;
        if not found then
          return next;
          continue;
        end if;
        if o.debounce_since is not null and not o.waiting then
          -- It went through before this delivery.
          goes_on := true;
        elsif o.waiting and debounce_due(o.created_at, o.debounce_since, s.period_ms, s.timeout_ms) <= clock_timestamp() then
          -- Due: it goes on, and the runs it replaced, each pointed at the one that replaced it, now at the one that
          -- runs: a level of the chain at a time, each read by the taken_by index (a recursive query's plan joined
          -- the chain against every run of the table, 23 ms a start beside 90,000 runs).
          update runs set queue_reason = null where id = s.run;
          level := array[s.run];
          loop
            select array_agg(r.id) into level from runs as r
            where r.taken_by = any(level) and r.status = 'skipped' and r.debounce_key is not null;
            exit when level is null;
            update runs set taken_by = s.run where id = any(level) and taken_by <> s.run;
          end loop;
          goes_on := true;
        elsif o.waiting then
          -- Woken before its time (a recovery's entry): it waits on, in its window.
          park_since := o.debounce_since;
        else
          -- First taken: the key's latest waiting run, unless that was due before this run was accepted.
          select r.id, r.created_at, r.debounce_since, (r.created_at, r.id) > (o.created_at, s.run) as later into w
          from runs as r
          where r.flow_id = s.flow and r.debounce_key = s.key and r.queue_reason = 'debounce'
            and r.status in ('queued', 'running') and r.id <> s.run
            and debounce_due(r.created_at, r.debounce_since, s.period_ms, s.timeout_ms) > o.created_at
          order by r.created_at desc, r.id desc limit 1;
          if not found then
            park_since := o.created_at;
          else
            -- The window began with the earliest start in it.
            began := least(w.debounce_since, o.created_at);
            if w.later then
              -- Taken after a later start of its key (workers took them out of order): it is the one replaced.
              update runs set debounce_since = began,
                wake_at = case when held_by is null then debounce_due(created_at, began, s.period_ms, s.timeout_ms) end
              where id = w.id;
              update runs set status = 'skipped', end_reason = p_reason, taken_by = w.id, debounce_key = s.key,
                debounce_since = coalesce(debounce_since, created_at), finished_at = now(), started_at = null,
                held_by = null, wake_at = null, queue_reason = null
              where id = s.run
              returning id, waiter, parent_run_id into ended, ended_waiter, ended_parent;
            else
              park_since := began;
              update runs set status = 'skipped', end_reason = p_reason, taken_by = s.run, debounce_key = s.key,
                debounce_since = coalesce(debounce_since, created_at), finished_at = now(), started_at = null,
                held_by = null, wake_at = null, queue_reason = null
              where id = w.id
              returning id, waiter, parent_run_id into ended, ended_waiter, ended_parent;
            end if;
          end if;
        end if;
        if park_since is not null then
          -- Parked: its claim given back, it waits queued in its key's window until it is due.
          update runs set debounce_key = s.key, debounce_since = park_since, queue_reason = 'debounce', held_by = null,
            status = 'queued', started_at = null,
            wake_at = debounce_due(created_at, park_since, s.period_ms, s.timeout_ms)
          where id = s.run and held_by = s.holder;
        end if;
        return next;
      end loop;
    end $$`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop function debounce_judge`.execute(db);
  await sql`drop function debounce_due`.execute(db);
}
