import { type Kysely, sql } from "kysely";

/**
 * A flow's singletons in `skip` mode judge the starts a worker takes together in one
 * statement (packages/core/src/engine/singleton.ts), as rate limits do (the
 * rate_limit_tallies migration): each start was a transaction of its own (its key's lock,
 * the lookup of the key's live run, the decision, the commit), four round trips from a worker
 * whose event loop is busy with the runs it executes, and a flow with a singleton completed
 * a fifth of the runs the same flow without one did.
 *
 * `singleton_judge` takes the starts' keys' locks (the advisory transaction locks of
 * `singleton/<flow>/<key>`, which `cancel` mode takes too) in one order, then judges each
 * start in order: one its holder no longer holds is left out; one admitted before (it keeps
 * its key) is admitted; otherwise it is admitted when no other run of its key is queued or
 * running, in the database or admitted earlier in the same call, and skipped naming that run
 * when one is. The statement that calls it makes the admitted starts keep their key.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create function singleton_judge(p_starts jsonb)
    returns table (id uuid, holder text, key text, admit boolean, reason text) language plpgsql as $$
    #variable_conflict use_column
    declare
      s record;
      r record;
      live uuid;
      mine_locks text[] := '{}';
      mine_runs uuid[] := '{}';
    begin
      perform pg_advisory_xact_lock(l.k) from (
        select distinct hashtext('singleton/' || (e->>'flow')::uuid || '/' || (e->>'key')) as k
        from jsonb_array_elements(p_starts) as e order by 1) as l;
      for s in
        select * from jsonb_to_recordset(p_starts) as x(run uuid, holder text, flow uuid, key text, reason_after text)
      loop
        select singleton_key, held_by into r from runs where runs.id = s.run for update;
        continue when not found or r.held_by is distinct from s.holder;
        id := s.run; holder := s.holder; key := s.key; reason := null;
        if r.singleton_key is not null then
          admit := true;
          return next;
          continue;
        end if;
        live := (select m.run from unnest(mine_locks, mine_runs) as m(l, run)
          where m.l = 'singleton/' || s.flow || '/' || s.key limit 1);
        if live is null then
          live := (select o.id from runs as o
            where o.flow_id = s.flow and o.singleton_key = s.key and o.status in ('queued', 'running') and o.id <> s.run
            limit 1);
        end if;
        admit := live is null;
        if admit then
          mine_locks := mine_locks || ('singleton/' || s.flow || '/' || s.key);
          mine_runs := mine_runs || s.run;
        else
          reason := 'singleton: run ' || live || s.reason_after;
        end if;
        return next;
      end loop;
    end $$`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop function singleton_judge`.execute(db);
}
