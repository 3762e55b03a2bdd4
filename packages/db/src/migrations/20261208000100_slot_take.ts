import { type Kysely, sql } from "kysely";

/**
 * A concurrency-limited flow's slot admission (`createSlotGate`, packages/core/src/engine/
 * concurrency.ts) as a function whose generic plan the session keeps: sent as a transaction
 * of two statements, its admission was planned at every batch of asks over every day
 * partition of `runs` (the counts of a key's holders and the first of its queue cannot be
 * pruned by id), and a deployment with a month's partitions (33) completed 44% fewer
 * concurrency-limited runs than one with a week's. One statement now: the keys' advisory
 * locks (taken in one order, `p_keys` as the gate names them), then the admission under
 * them, each with a snapshot of its own (a volatile function's statements see what committed
 * before them, as the transaction's did). A run waiting for a slot has the queue reason
 * `slot`, written out: the partial index of a key's queue (`runs_slots_queue`) is usable only
 * where the plan knows it, which a parameter's value is not to a generic plan. `p_recheck_ms` is
 * how far ahead a waiting run's `wake_at` goes. Answers each asker's admission.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create function slot_take(p_asks jsonb, p_keys text[], p_recheck_ms integer)
    returns table (holder text, admitted boolean)
    language plpgsql set plan_cache_mode = force_generic_plan as $$
    #variable_conflict use_column
    declare
      ids uuid[] := array(select (a ->> 'id')::uuid from jsonb_array_elements(p_asks) as a);
    begin
      perform pg_advisory_xact_lock(l.k)
      from (select distinct hashtext(x) as k from unnest(p_keys) as x order by 1) as l;
      -- Counted once the locks are held: no other admission of these keys is under way, and
      -- a hand-over leaves the count as it was.
      return query
      with v as (
        select v.*, (r.slot_key is not distinct from v.key and r.queue_reason is null) as holds,
          r.created_at - v.ahead_s * interval '1 second' as place
        from jsonb_to_recordset(p_asks) as v(
          id uuid, holder text, flow_id uuid, key text, lim integer, ahead_s double precision, claimed boolean)
        join runs as r on r.id = v.id and r.id = any(ids)
          and case when v.claimed then r.held_by = v.holder else r.status = 'queued' and r.held_by is null end
      ),
      k as (
        select g.flow_id, g.key, g.free, f.slot_order as first_place, f.id as first_id
        from (
          select v.flow_id, v.key, max(v.lim) - count(*) filter (where v.holds) - (
              select count(*) from runs as o
              where o.flow_id = v.flow_id and o.slot_key = v.key and o.queue_reason is null
                and o.status in ('queued', 'running') and o.id <> all(ids)) as free
          from v group by v.flow_id, v.key) as g
        left join lateral (
          select w.slot_order, w.id from runs as w
          where w.flow_id = g.flow_id and w.slot_key = g.key and w.queue_reason = 'slot'
            and w.status in ('queued', 'running') and w.id <> all(ids)
          order by w.slot_order, w.id limit 1) as f on true
      ),
      decided as (
        select v.id, v.holder, v.claimed, v.key, v.place, v.holds or (
          row_number() over (partition by v.flow_id, v.key, v.holds order by v.place, v.id) <= k.free
          and (k.first_id is null or (v.place, v.id) < (k.first_place, k.first_id))) as admitted
        from v join k on k.flow_id = v.flow_id and k.key = v.key
      )
      update runs set
        slot_key = d.key,
        queue_reason = case when d.admitted then null else 'slot' end,
        slot_order = case when d.admitted then null else d.place end,
        held_by = case when d.admitted then runs.held_by end,
        wake_at = case when d.admitted then runs.wake_at else now() + p_recheck_ms * interval '1 millisecond' end,
        status = case when d.admitted or exists (select 1 from run_steps as s where s.run_id = runs.id and s.run_id = any(ids))
          then runs.status else 'queued' end,
        started_at = case when d.admitted or exists (select 1 from run_steps as s where s.run_id = runs.id and s.run_id = any(ids))
          then runs.started_at end
      from decided as d
      where runs.id = d.id and runs.id = any(ids)
        and runs.held_by is not distinct from (case when d.claimed then d.holder end)
      returning d.holder, d.admitted;
    end $$`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop function slot_take`.execute(db);
}
