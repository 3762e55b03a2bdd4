import { type Kysely, sql } from "kysely";

/**
 * The hand-over of freed concurrency slots (packages/core/src/engine/concurrency.ts) as two
 * functions whose generic plans the session keeps, as `slot_take` is: the front of a key's
 * queue cannot be found by run id, so a statement reading it was planned over every day
 * partition of `runs` each time, 2 ms with 28 partitions. With a month's partitions a
 * concurrency-limited flow completed a quarter fewer runs a second than with a week's.
 *
 * `slot_hand_over` is called by the run store's write that freed the slots, in the same
 * statement: per flow and key of `p_freed` (rows of flow_id, key, n), the first `n` runs of
 * the key's queue, locked (skipping the ones another write is handing over) and set to hold
 * the slot (the count of holders does not change: no lock is needed), `wake_at`
 * `p_requeue` ahead so that the waker queues them should their entries be lost. Answers
 * them, numbered per key in queue order, with what their entries carry; a run that never
 * began (`queued`, no `started_at`) with its trigger data as JSON text.
 *
 * `slot_hand_free` is the second look of a write that found no run waiting: under the
 * key's lock (`p_lock`, named as `slot_take` is given its keys'), the runs at the front of
 * its queue are handed the slots free now. Answers their ids.
 *
 * The waiting reason `slot` is written out: the partial index of a key's queue
 * (`runs_slots_queue`) is usable only where the plan knows it.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create function slot_hand_over(p_freed jsonb, p_requeue interval)
    returns table (
      id uuid, account_id text, flow_id uuid, key text, revision integer, waiter text, parent_run_id uuid,
      call_depth integer, traceparent text, trigger text, n bigint)
    language plpgsql set plan_cache_mode = force_generic_plan as $$
    #variable_conflict use_column
    begin
      return query
      with successors as (
        select q.id, q.account_id, f.flow_id, f.key, q.revision, q.waiter, q.parent_run_id, q.call_depth,
          q.traceparent, case when q.status = 'queued' and q.started_at is null then q.trigger::text end as trigger,
          row_number() over (partition by f.flow_id, f.key order by q.slot_order, q.id) as n
        from jsonb_to_recordset(p_freed) as f(flow_id uuid, key text, n integer) cross join lateral (
          select w.id, w.account_id, w.slot_order, w.revision, w.waiter, w.parent_run_id, w.call_depth, w.status,
            w.started_at, w.trigger, w.traceparent from runs as w
          where w.flow_id = f.flow_id and w.slot_key = f.key and w.queue_reason = 'slot'
            and w.status in ('queued', 'running')
          order by w.slot_order, w.id limit f.n for update skip locked) as q
      ),
      handed as (
        update runs set queue_reason = null, slot_order = null, wake_at = now() + p_requeue
        from successors as s where runs.id = s.id
      )
      select * from successors;
    end $$`.execute(db);
  await sql`
    create function slot_hand_free(p_lock text, p_flow uuid, p_key text, p_limit integer, p_requeue interval)
    returns table (id uuid)
    language plpgsql set plan_cache_mode = force_generic_plan as $$
    #variable_conflict use_column
    begin
      perform pg_advisory_xact_lock(hashtext(p_lock));
      return query
      update runs set queue_reason = null, slot_order = null, wake_at = now() + p_requeue
      where runs.id in (
        select w.id from runs as w
        where w.flow_id = p_flow and w.slot_key = p_key and w.queue_reason = 'slot'
          and w.status in ('queued', 'running')
        order by w.slot_order, w.id
        limit greatest(0, p_limit - (
          select count(*) from runs as o
          where o.flow_id = p_flow and o.slot_key = p_key and o.queue_reason is null
            and o.status in ('queued', 'running')))
        for update skip locked)
      returning runs.id;
    end $$`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop function slot_hand_free`.execute(db);
  await sql`drop function slot_hand_over`.execute(db);
}
