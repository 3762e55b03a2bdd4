import { type Kysely, sql } from "kysely";

/**
 * The INSERT that creates runs (packages/core/src/runs/insert.ts, steps 1 and 2 of its
 * protocol) as a PL/pgSQL function, whose plan a session keeps: sent as a statement, it was
 * parsed and planned at every call, about a third of its time for a batch of six runs on
 * PGlite. One statement serves every start: a run its start executed in place (`ran`, when
 * it gets the revision it ran) is recorded as it ended, with its step records; every other
 * row enters as `p_entering` says — `queued` (someone waits for it), `queued-for-waker`
 * (`wake_at` p_requeue_after ahead: a background start's) or `filtered` (ended at once).
 * Answers the rows it inserted.
 *
 * The function and the protocol's comments in insert.ts go together: the flow's row is read
 * live and the account's (else no run is inserted) and held `for key share` until commit, as
 * all that keeps its runs' reference; a delivery id is claimed in `run_deliveries` and its run
 * inserted only if the claim was its own.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create function run_insert(p_rows jsonb, p_entering text, p_requeue_after interval)
    returns table (inserted_id uuid, inserted_revision integer, in_place boolean) language plpgsql as $$
    #variable_conflict use_column
    begin
      return query
      with v as (
        select v.id, f.account_id, f.id as flow_id, coalesce(v.revision, f.revision) as revision, v.trigger,
          v.replay_of, v.replay_job_id, v.delivery_id, v.waiter, v.parent_run_id, coalesce(v.call_depth, 0) as call_depth,
          v.traceparent, case when coalesce(v.revision, f.revision) = v.in_place_revision then v.ran end as ran
        from jsonb_to_recordset(p_rows) as v(
          id uuid, account_id text, flow_id uuid, trigger jsonb, replay_of uuid, replay_job_id uuid, delivery_id text,
          waiter text, revision integer, parent_run_id uuid, call_depth integer, traceparent text,
          in_place_revision integer, ran jsonb)
        join flows f on f.id = v.flow_id and f.account_id = v.account_id and f.deleted_at is null
        for key share of f
      ), claimed as (
        insert into run_deliveries (flow_id, delivery_id, run_id)
        select flow_id, delivery_id, id from v where delivery_id is not null
        on conflict do nothing
        returning run_id
      ), inserted as (
        -- A run executed in place began took_ms before this statement: accepted then, by the database's clock.
        insert into runs (
          id, account_id, flow_id, revision, status, trigger, replay_of, replay_job_id, delivery_id, waiter, parent_run_id,
          call_depth, queue_reason, error, wake_at, waiting_on, created_at, started_at, finished_at, recorded_bytes,
          traceparent)
        select id, account_id, flow_id, revision,
          coalesce(ran ->> 'status', case when p_entering = 'filtered' then 'filtered' else 'queued' end),
          trigger, replay_of, replay_job_id, delivery_id, waiter, parent_run_id, call_depth, null, ran ->> 'error',
          case when ran is not null then (ran ->> 'wake_at')::timestamptz
            when p_entering = 'queued-for-waker' then now() + p_requeue_after end,
          case when jsonb_typeof(ran -> 'waiting_on') = 'array' then array(select jsonb_array_elements_text(ran -> 'waiting_on')) end,
          now() - coalesce((ran ->> 'took_ms')::integer, 0) * interval '1 millisecond',
          case when ran is not null then now() - coalesce((ran ->> 'took_ms')::integer, 0) * interval '1 millisecond' end,
          case when (ran ->> 'finished')::boolean or (ran is null and p_entering = 'filtered') then now() end,
          coalesce((ran ->> 'recorded_bytes')::bigint, 0), traceparent
        from v where delivery_id is null or id in (select run_id from claimed)
        returning id, revision
      ), steps as (
        insert into run_steps (run_id, name, record, output)
        select v.id, s.name, s.record, s.output
        from v join inserted as i on i.id = v.id
          cross join lateral jsonb_to_recordset(v.ran -> 'steps') as s(name text, record jsonb, output jsonb)
        where v.ran is not null
      )
      select i.id, i.revision, v.ran is not null from inserted as i join v on v.id = i.id;
    end $$`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop function run_insert`.execute(db);
}
