import type { DatabaseHandle } from "@platform/db";
import { sql } from "kysely";
import { assertInteger, assertNames } from "../arguments.ts";
import type { LanePort } from "../port.ts";
import { insertEntries } from "./append-batches.ts";
import { guarded } from "./failures.ts";
import { topicOf } from "./wakeups.ts";

/** The payload of a lane's turn (see `laneTurnOf`). */
const turnPayload = (lane: string, turn: number) => `{"lane":${JSON.stringify(lane)},"turn":${turn}}`;

interface Waiting {
  lane: string;
  payload: string;
  resolve(): void;
  reject(error: unknown): void;
}

/** Most entries one statement adds to lanes. */
const MAX_BATCH = 1000;

/**
 * Lanes in tables (see the `broker_lanes` migration). Appends to the lanes of one stream made
 * together share one transaction, as `AppendBatches` does for streams: under a flood the lane
 * already has its turn on the stream, and the transaction is one statement.
 */
export function postgresLanes(handle: DatabaseHandle): LanePort {
  const db = handle.db;
  const queues = new Map<string, { scope: string; stream: string; waiting: Waiting[] }>();

  /**
   * Adds the entries to their lanes. The first entry of a lane with no turn on the stream goes
   * straight onto the stream, its first turn right behind it (in one statement under a flood,
   * where every lane has its turn out already).
   */
  async function write(scope: string, stream: string, batch: Waiting[]): Promise<void> {
    const items = JSON.stringify(batch.map(({ lane, payload }) => [lane, payload]));
    await db.transaction().execute(async (trx) => {
      const direct = await sql<{ lane: string; payload: string }>`
        with items as (
          select e->>0 as lane, e->>1 as payload, o from jsonb_array_elements(${items}::jsonb) with ordinality as a(e, o)
        ), lanes as (
          insert into broker_lanes as l (scope, stream, lane, turn)
          select distinct ${scope}, ${stream}, lane, 1 from items
          on conflict (scope, stream, lane) do update set turn = l.turn
          returning lane, xmax = 0 as started
        ), firsts as (
          select distinct on (i.lane) i.lane, i.payload, i.o from items i join lanes l on l.lane = i.lane and l.started
          order by i.lane, i.o
        ), entries as (
          insert into broker_lane_entries (scope, stream, lane, payload)
          select ${scope}, ${stream}, lane, payload from items
          where o not in (select o from firsts)
          order by o
        )
        select lane, payload from firsts order by o`.execute(trx);
      if (direct.rows.length === 0) return;
      const entries = direct.rows.flatMap(({ lane, payload }) => [payload, turnPayload(lane, 1)]);
      await insertEntries(trx, scope, stream, topicOf(scope, stream), entries);
    });
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
      return guarded(() =>
        db.transaction().execute(async (trx) => {
          // The lane's row lock: an append to the lane waits for this admission, or this for it.
          const current = await sql<{ turn: string }>`
            select turn from broker_lanes where scope = ${scope} and stream = ${stream} and lane = ${lane}
            for update`.execute(trx);
          if (Number(current.rows[0]?.turn ?? 0) !== turn) return 0;
          const moved = await sql<{ id: string; payload: string }>`
            delete from broker_lane_entries where scope = ${scope} and stream = ${stream} and lane = ${lane}
              and id in (
                select id from broker_lane_entries where scope = ${scope} and stream = ${stream} and lane = ${lane}
                order by id limit ${count})
            returning id, payload`.execute(trx);
          const payloads = moved.rows.sort((a, b) => Number(a.id) - Number(b.id)).map((row) => row.payload);
          const next = await sql<{ turn: string }>`
            update broker_lanes set turn = turn + 1
            where scope = ${scope} and stream = ${stream} and lane = ${lane}
              and exists (select 1 from broker_lane_entries where scope = ${scope} and stream = ${stream} and lane = ${lane})
            returning turn`.execute(trx);
          const nextTurn = next.rows[0]?.turn;
          if (nextTurn === undefined) {
            await sql`delete from broker_lanes where scope = ${scope} and stream = ${stream} and lane = ${lane}`.execute(
              trx,
            );
          } else payloads.push(turnPayload(lane, Number(nextTurn)));
          if (payloads.length > 0) await insertEntries(trx, scope, stream, topicOf(scope, stream), payloads);
          return moved.rows.length;
        }),
      );
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
