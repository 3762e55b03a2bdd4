import { type Kysely, sql } from "kysely";

/**
 * A flow's batches judge the starts a worker takes together in one statement
 * (packages/core/src/engine/batch.ts), as the other flow controls do: each start was a
 * transaction of its own (its key's lock, the run and its key's open batch read, the hold,
 * the join or the close, the commit), four or five round trips from a busy worker, one start
 * of a key at a time; a flow-wide batch of ten completed 34–39 runs a second in scale-out
 * (340–390 starts), its runs waiting 2.4–2.9 s for a batch of at most one second.
 *
 * `batch_judge` takes the starts' keys' locks (the advisory transaction locks of
 * `batch/<flow>/<key>`) in one order, then judges each start in order as batch.ts describes,
 * each seeing what the ones before it wrote. A start its holder no longer holds is answered
 * `goes_on` false and left as it is. Answers, for each start judged: whether it goes on, and
 * then its trigger (the batch's list); the holder it joined (`joined`; it ended `batched`,
 * `p_joined` followed by the holder's id) and whom to tell; the holder of a batch it closed
 * that no delivery holds (`woken`: to be queued now, and by the waker at the latest).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create function batch_close(p_holder uuid, out list jsonb, out held boolean)
    language plpgsql set plan_cache_mode = force_generic_plan as $$
    begin
      update runs set queue_reason = null,
        wake_at = case when held_by is null then now() else wake_at end,
        trigger = (
          select jsonb_agg(m.trigger order by m.created_at, m.id) from runs as m
          where m.id = p_holder or (m.taken_by = p_holder and m.status = 'batched'))
      where id = p_holder
      returning trigger, held_by is not null into list, held;
    end $$`.execute(db);
  await sql`
    create function batch_judge(p_starts jsonb, p_max_bytes integer, p_joined text)
    returns table (run uuid, goes_on boolean, trigger jsonb, joined uuid, joined_waiter text, joined_parent uuid,
      woken uuid)
    language plpgsql set plan_cache_mode = force_generic_plan as $$
    #variable_conflict use_column
    declare
      s record;
      o record;
      h record;
      closed record;
      hold_size integer;
      hold_bytes bigint;
    begin
      perform pg_advisory_xact_lock(l.k) from (
        select distinct hashtext('batch/' || (e->>'flow')::uuid || '/' || (e->>'key')) as k
        from jsonb_array_elements(p_starts) as e order by 1) as l;
      for s in
        select * from jsonb_to_recordset(p_starts) as x(run uuid, holder text, flow uuid, key text, max_items integer,
          timeout_ms integer)
      loop
        run := s.run; goes_on := false; trigger := null; joined := null; joined_waiter := null; joined_parent := null;
        woken := null; hold_size := null; hold_bytes := null;
        select r.batch_key is not null as opened, r.queue_reason is not distinct from 'batch' as collecting,
          (r.batch_size >= s.max_items or r.created_at + s.timeout_ms * interval '1 millisecond' <= clock_timestamp())
            is true as due,
          octet_length(r.trigger::text) as bytes, r.created_at, r.trigger, r.batch_size, r.batch_bytes
        into o from runs as r where r.id = s.run and r.held_by = s.holder;
        if not found then
          return next;
          continue;
        end if;
        if o.opened and not o.collecting then
          -- Closed by a start that joined or passed it, perhaps after this delivery read the run: the list is in the row.
          goes_on := true;
          trigger := o.trigger;
        elsif o.collecting and o.due then
          select * into closed from batch_close(s.run);
          goes_on := true;
          trigger := closed.list;
        elsif o.collecting then
          -- Woken before its time (a recovery's entry): it collects on.
          hold_size := o.batch_size;
          hold_bytes := o.batch_bytes;
        else
          -- First taken: it joins the key's open batch, unless that was due before this run was accepted, or its
          -- list as JSON (each item, a separator, the brackets) would pass p_max_bytes.
          select r.id, r.batch_size, r.batch_bytes,
            r.created_at + s.timeout_ms * interval '1 millisecond' <= o.created_at as due
          into h from runs as r
          where r.flow_id = s.flow and r.batch_key = s.key and r.queue_reason = 'batch'
            and r.status in ('queued', 'running') and r.id <> s.run
          order by r.created_at, r.id limit 1;
          if not found or h.due or h.batch_bytes + o.bytes + 4 > p_max_bytes then
            if found then
              select * into closed from batch_close(h.id);
              if not closed.held then woken := h.id; end if;
            end if;
            hold_size := 1;
            hold_bytes := o.bytes + 2;
          else
            update runs set status = 'batched', end_reason = p_joined || h.id, taken_by = h.id, batch_key = s.key,
              finished_at = now(), started_at = null, held_by = null, wake_at = null, queue_reason = null
            where id = s.run
            returning taken_by, waiter, parent_run_id into joined, joined_waiter, joined_parent;
            update runs set batch_size = batch_size + 1, batch_bytes = batch_bytes + o.bytes + 2 where id = h.id;
            if h.batch_size + 1 >= s.max_items then
              select * into closed from batch_close(h.id);
              if not closed.held then woken := h.id; end if;
            end if;
          end if;
        end if;
        if hold_size is not null then
          -- It holds its key's batch: its claim given back, it waits queued until the batch is due.
          update runs set batch_key = s.key, batch_size = hold_size, batch_bytes = hold_bytes, queue_reason = 'batch',
            held_by = null, status = 'queued', started_at = null,
            wake_at = created_at + s.timeout_ms * interval '1 millisecond'
          where id = s.run and held_by = s.holder;
        end if;
        return next;
      end loop;
    end $$`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop function batch_judge`.execute(db);
  await sql`drop function batch_close`.execute(db);
}
