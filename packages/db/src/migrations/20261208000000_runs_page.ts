import { type Kysely, sql } from "kysely";

/**
 * A page of runs, newest first (`GET /runs`, `GET /flows/{id}/runs` without a trigger search;
 * packages/core/src/runs/service.ts), as a function whose plan the session keeps. Sent as a
 * statement, it was planned at every call over every partition of `runs` (a day each: the
 * retention's and a week ahead) and each partition's sixteen indexes: with 33 partitions,
 * 2.3–2.6 ms of planning (PostgreSQL 15) for 0.1 ms of execution, ten times the API's own
 * work for the request. The generic plan prunes the partitions as it runs, by the page's id
 * bounds (the cursor, and `from`/`to` as id ranges), and is planned once a session.
 *
 * An account's runs are read along `runs_account_id` (account_id, id), a flow's along
 * `runs_flow_id` (flow_id, id): two statements, each with the plan its index gives. Every
 * bound is optional (null); `p_from`/`p_to` are exact on `created_at` within their id ranges.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create function runs_page(
      p_account text, p_flow uuid, p_status text, p_before uuid,
      p_from_id uuid, p_from timestamptz, p_to_id uuid, p_to timestamptz, p_limit integer)
    returns table (
      id uuid, flow_id uuid, revision integer, status text, error text, replay_of uuid, parent_run_id uuid,
      queue_reason text, end_reason text, taken_by uuid, created_at timestamptz, started_at timestamptz,
      finished_at timestamptz)
    language plpgsql stable set plan_cache_mode = force_generic_plan as $$
    #variable_conflict use_column
    begin
      if p_flow is null then
        return query
        select r.id, r.flow_id, r.revision, r.status, r.error, r.replay_of, r.parent_run_id, r.queue_reason,
          r.end_reason, r.taken_by, r.created_at, r.started_at, r.finished_at
        from runs as r
        where r.account_id = p_account
          and r.id < coalesce(p_before, 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid)
          and r.id >= coalesce(p_from_id, '00000000-0000-0000-0000-000000000000'::uuid)
          and r.id < coalesce(p_to_id, 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid)
          and (p_status is null or r.status = p_status)
          and (p_from is null or r.created_at >= p_from)
          and (p_to is null or r.created_at < p_to)
        order by r.id desc
        limit p_limit;
      else
        return query
        select r.id, r.flow_id, r.revision, r.status, r.error, r.replay_of, r.parent_run_id, r.queue_reason,
          r.end_reason, r.taken_by, r.created_at, r.started_at, r.finished_at
        from runs as r
        where r.flow_id = p_flow and r.account_id = p_account
          and r.id < coalesce(p_before, 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid)
          and r.id >= coalesce(p_from_id, '00000000-0000-0000-0000-000000000000'::uuid)
          and r.id < coalesce(p_to_id, 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid)
          and (p_status is null or r.status = p_status)
          and (p_from is null or r.created_at >= p_from)
          and (p_to is null or r.created_at < p_to)
        order by r.id desc
        limit p_limit;
      end if;
    end $$`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop function runs_page`.execute(db);
}
