import type { DatabaseHandle } from "@platform/db";
import { sql } from "kysely";
import { assertInteger, assertNames } from "../arguments.ts";
import type { LanePort } from "../port.ts";
import { APPENDS_CHANNEL } from "./append-batches.ts";
import { guarded } from "./failures.ts";
import { topicOf } from "./wakeups.ts";

/** How a turn's payload starts (see `laneTurnOf`): `{"lane":<lane as JSON>,"turn":<n>}`. */
const TURN_PREFIX = '{"lane":';

/**
 * The end of a statement whose `direct` CTE holds entries (`k` orders them, `payload`) to put
 * on the stream: numbered from the stream row (locked until commit, as every append does),
 * inserted and announced; nothing is touched when there are none. Selects one row.
 */
function appendDirect(scope: string, stream: string) {
  return sql`
    , numbered as (
      select payload, row_number() over (order by k) as n, count(*) over () as total from direct
    ), next as (
      insert into broker_streams as s (scope, stream, last_id)
      select ${scope}, ${stream}, count(*) from direct having count(*) > 0
      on conflict (scope, stream) do update set last_id = s.last_id + excluded.last_id
      returning last_id
    ), appended as (
      insert into broker_stream_entries (scope, stream, id, payload, created_at)
      select ${scope}, ${stream}, next.last_id - numbered.total + numbered.n, numbered.payload, clock_timestamp()
      from next, numbered
      returning id
    )
    select (select count(*) from (select pg_notify(${APPENDS_CHANNEL}, ${topicOf(scope, stream)})
      where exists (select 1 from appended)) as notified) as notified`;
}

interface Waiting {
  lane: string;
  payload: string;
  resolve(): void;
  reject(error: unknown): void;
}

/** Most entries one statement adds to lanes. */
const MAX_BATCH = 1000;

/**
 * Lanes in tables (see the `broker_lanes` migrations). Appends to the lanes of one stream made
 * together share one statement, as `AppendBatches` does for streams, and an admission is one
 * statement too: a lane costs a run no more round trips than the stream alone did.
 */
export function postgresLanes(handle: DatabaseHandle): LanePort {
  const db = handle.db;
  const queues = new Map<string, { scope: string; stream: string; waiting: Waiting[] }>();

  /**
   * Adds the entries to their lanes, in one statement. The first entry of a lane with no turn
   * out goes straight onto the stream, its first turn right behind it; the others wait in
   * their lanes, counted on the lane's row (`waiting`), whose upsert also locks it against an
   * admission of the lane at the same time.
   */
  async function write(scope: string, stream: string, batch: Waiting[]): Promise<void> {
    const items = JSON.stringify(batch.map(({ lane, payload }) => [lane, payload]));
    await sql`
      with items as (
        select e->>0 as lane, e->>1 as payload, o from jsonb_array_elements(${items}::jsonb) with ordinality as a(e, o)
      ), lanes as (
        insert into broker_lanes as l (scope, stream, lane, turn, waiting)
        select ${scope}, ${stream}, lane, 1, count(*) - 1 from items group by lane
        on conflict (scope, stream, lane) do update set waiting = l.waiting + excluded.waiting + 1
        returning lane, xmax = 0 as started
      ), firsts as (
        select distinct on (i.lane) i.lane, i.payload, i.o from items i join lanes l on l.lane = i.lane and l.started
        order by i.lane, i.o
      ), waiting as (
        insert into broker_lane_entries (scope, stream, lane, payload)
        select ${scope}, ${stream}, lane, payload from items where o not in (select o from firsts) order by o
      ), direct as (
        select f.o * 2 as k, f.payload from firsts f
        union all
        select f.o * 2 + 1, ${TURN_PREFIX} || to_json(f.lane)::text || ',"turn":1}' from firsts f
      )
      ${appendDirect(scope, stream)}`.execute(db);
  }

  async function flush(key: string): Promise<void> {
    const queue = queues.get(key);
    if (!queue) return;
    while (queue.waiting.length > 0) {
      const batch = queue.waiting.splice(0, MAX_BATCH);
      try {
        await guarded(() => write(queue.scope, queue.stream, batch));
        for (const waiting of batch) waiting.resolve();
      } catch (error) {
        for (const waiting of batch) waiting.reject(error);
      }
    }
    queues.delete(key);
  }

  return {
    appendToLane(scope, stream, lane, payload) {
      try {
        assertNames({ scope, stream, lane });
      } catch (error) {
        return Promise.reject(error);
      }
      const key = topicOf(scope, stream);
      let queue = queues.get(key);
      if (!queue) {
        queue = { scope, stream, waiting: [] };
        queues.set(key, queue);
        setImmediate(() => void flush(key));
      }
      const waiting = queue.waiting;
      return new Promise<void>((resolve, reject) => waiting.push({ lane, payload, resolve, reject }));
    },

    async admitLane(scope, stream, { lane, turn }, count) {
      assertNames({ scope, stream, lane });
      assertInteger("turn", turn, 1);
      assertInteger("count", count, 1, 10_000);
      // One statement, whether the lane has entries waiting or not (a quiet account's turn only
      // ends its lane). The ids it moves are picked once, as an array (an `in (subquery)` was
      // planned as a loop over the lane's whole backlog, each step picking them again: a turn
      // of a lane with thousands waiting took 80 ms). The lane's row, locked, is read as its
      // newest version even if an append committed while this waited for the lock, so
      // `waiting` counts entries this statement's snapshot may not see: those stay for the
      // next turn, which `waiting` says to give.
      const result = await guarded(() =>
        sql<{ moved: number }>`
          with lane as (
            select waiting from broker_lanes
            where scope = ${scope} and stream = ${stream} and lane = ${lane} and turn = ${turn}
            for update
          ), moved as (
            delete from broker_lane_entries where scope = ${scope} and stream = ${stream} and lane = ${lane}
              and id = any(array(
                select id from broker_lane_entries
                where scope = ${scope} and stream = ${stream} and lane = ${lane} and exists (select 1 from lane)
                order by id limit ${count}))
            returning id, payload
          ), left_over as (
            select waiting - (select count(*) from moved) as waiting from lane
          ), next_turn as (
            update broker_lanes set turn = turn + 1, waiting = (select waiting from left_over)
            where scope = ${scope} and stream = ${stream} and lane = ${lane} and turn = ${turn}
              and (select waiting from left_over) > 0
            returning turn
          ), done as (
            delete from broker_lanes
            where scope = ${scope} and stream = ${stream} and lane = ${lane} and turn = ${turn}
              and (select waiting from left_over) <= 0
          ), direct as (
            select id as k, payload from moved
            union all
            select ${Number.MAX_SAFE_INTEGER}, ${TURN_PREFIX} || to_json(${lane}::text)::text || ',"turn":' || turn || '}'
            from next_turn
          )
          ${appendDirect(scope, stream)}, (select count(*) from moved)::int as moved`.execute(db),
      );
      return result.rows[0]?.moved ?? 0;
    },

    async laneLength(scope, stream, lane) {
      assertNames({ scope, stream, lane });
      const result = await guarded(() =>
        sql<{ count: string }>`
          select count(*) as count from broker_lane_entries
          where scope = ${scope} and stream = ${stream} and lane = ${lane}`.execute(db),
      );
      return Number(result.rows[0]?.count ?? 0);
    },
  };
}
