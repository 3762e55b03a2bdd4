import { type Kysely, sql } from "kysely";

/**
 * The PostgreSQL broker's statements that every queued run goes through, as PL/pgSQL
 * functions, whose plans a session keeps. Sent as statements, each was parsed, analysed and
 * planned again at every call: in PGlite (one session, in the same thread as everything
 * else) planning a group read took about half of its time, and the three statements below
 * were a third of the embedded deployment's database time per webhook. The statements are
 * those of broker/postgres/streams.ts and lanes.ts before this migration, unchanged; the
 * comments there say why they are correct.
 *
 * `#variable_conflict use_column`: a name in a statement is a column, never one of the
 * function's own output columns (`id`, `payload`, ...), which PL/pgSQL would otherwise see as
 * ambiguous. Parameters are `p_`-prefixed; the notification channel and topic come from the
 * caller, which owns them (broker/postgres/wakeups.ts).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create function broker_read_group(p_scope text, p_stream text, p_group text, p_consumer text, p_count integer)
    returns table (found boolean, id bigint, payload text, ts double precision) language plpgsql as $$
    #variable_conflict use_column
    begin
      return query
      with cursor as (
        select g.last_delivered_id, s.last_id
        from broker_stream_groups g join broker_streams s on s.scope = g.scope and s.stream = g.stream
        where g.scope = p_scope and g.stream = p_stream and g.group_name = p_group
      ), locked as (
        select last_delivered_id from broker_stream_groups
        where scope = p_scope and stream = p_stream and group_name = p_group
          and exists (select 1 from cursor where last_id > last_delivered_id)
        for update
      ), picked as (
        select id, payload, created_at from broker_stream_entries
        where scope = p_scope and stream = p_stream and id > (select last_delivered_id from locked)
        order by id limit p_count
        for key share
      ), pending as (
        insert into broker_stream_pending (scope, stream, group_name, entry_id, consumer, delivered_at, deliveries)
        select p_scope, p_stream, p_group, id, p_consumer, clock_timestamp(), 1 from picked
      ), advanced as (
        update broker_stream_groups set last_delivered_id = (select max(id) from picked)
        where scope = p_scope and stream = p_stream and group_name = p_group and exists (select 1 from picked)
      )
      select exists (select 1 from cursor), p.id, p.payload, extract(epoch from p.created_at)::float8 * 1000
      from (select 1) as one left join picked as p on true
      order by p.id;
    end $$`.execute(db);

  await sql`
    create function broker_append_to_lanes(p_scope text, p_stream text, p_items jsonb, p_channel text, p_topic text)
    returns void language plpgsql as $$
    #variable_conflict use_column
    declare
      notices bigint;
    begin
      with items as (
        select e->>0 as lane, e->>1 as payload, o from jsonb_array_elements(p_items) with ordinality as a(e, o)
      ), lanes as (
        insert into broker_lanes as l (scope, stream, lane, turn, waiting)
        select p_scope, p_stream, lane, 1, count(*) - 1 from items group by lane
        on conflict (scope, stream, lane) do update set waiting = l.waiting + excluded.waiting + 1
        returning lane, xmax = 0 as started
      ), firsts as (
        select distinct on (i.lane) i.lane, i.payload, i.o from items i join lanes l on l.lane = i.lane and l.started
        order by i.lane, i.o
      ), waiting as (
        insert into broker_lane_entries (scope, stream, lane, payload)
        select p_scope, p_stream, lane, payload from items where o not in (select o from firsts) order by o
      ), direct as (
        select f.o * 2 as k, f.payload from firsts f
        union all
        select f.o * 2 + 1, '{"lane":' || to_json(f.lane)::text || ',"turn":1}' from firsts f
      )
      ${sql.raw(APPEND_DIRECT)}
      select count into notices from notified;
    end $$`.execute(db);

  await sql`
    create function broker_admit_lane(p_scope text, p_stream text, p_lane text, p_turn bigint, p_count integer,
      p_channel text, p_topic text)
    returns integer language plpgsql as $$
    #variable_conflict use_column
    declare
      moved_count integer;
    begin
      with lane as (
        select waiting from broker_lanes
        where scope = p_scope and stream = p_stream and lane = p_lane and turn = p_turn
        for update
      ), moved as (
        delete from broker_lane_entries where scope = p_scope and stream = p_stream and lane = p_lane
          and id = any(array(
            select id from broker_lane_entries
            where scope = p_scope and stream = p_stream and lane = p_lane and exists (select 1 from lane)
            order by id limit p_count))
        returning id, payload
      ), left_over as (
        select waiting - (select count(*) from moved) as waiting from lane
      ), next_turn as (
        update broker_lanes set turn = turn + 1, waiting = (select waiting from left_over)
        where scope = p_scope and stream = p_stream and lane = p_lane and turn = p_turn
          and (select waiting from left_over) > 0
        returning turn
      ), done as (
        delete from broker_lanes
        where scope = p_scope and stream = p_stream and lane = p_lane and turn = p_turn
          and (select waiting from left_over) <= 0
      ), direct as (
        select id as k, payload from moved
        union all
        select 9007199254740991, '{"lane":' || to_json(p_lane)::text || ',"turn":' || turn || '}'
        from next_turn
      )
      ${sql.raw(APPEND_DIRECT)}
      select (select count(*) from moved)::integer into moved_count from notified;
      return moved_count;
    end $$`.execute(db);
}

/**
 * The end of a statement whose `direct` CTE holds entries (`k` orders them, `payload`) to put
 * on the stream: numbered from the stream row (locked until commit, as every append does),
 * inserted and announced; nothing is touched when there are none. Its last CTE, `notified`,
 * must be read for the announcement to be made.
 */
const APPEND_DIRECT = `
      , numbered as (
        select payload, row_number() over (order by k) as n, count(*) over () as total from direct
      ), next as (
        insert into broker_streams as s (scope, stream, last_id)
        select p_scope, p_stream, count(*) from direct having count(*) > 0
        on conflict (scope, stream) do update set last_id = s.last_id + excluded.last_id
        returning last_id
      ), appended as (
        insert into broker_stream_entries (scope, stream, id, payload, created_at)
        select p_scope, p_stream, next.last_id - numbered.total + numbered.n, numbered.payload, clock_timestamp()
        from next, numbered
        returning id
      ), notified as (
        select count(*) from (select pg_notify(p_channel, p_topic) where exists (select 1 from appended)) as n
      )`;

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop function broker_admit_lane`.execute(db);
  await sql`drop function broker_append_to_lanes`.execute(db);
  await sql`drop function broker_read_group`.execute(db);
}
