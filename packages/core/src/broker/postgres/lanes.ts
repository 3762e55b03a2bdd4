import type { DatabaseHandle } from "@platform/db";
import { sql } from "kysely";
import { keyedGroupCommit, ONE_STATEMENT_AT_A_TIME } from "../../group-commit.ts";
import { assertInteger, assertNames } from "../arguments.ts";
import type { LanePort } from "../port.ts";
import { APPENDS_CHANNEL } from "./append-batches.ts";
import { guarded } from "./failures.ts";
import { topicOf } from "./wakeups.ts";

interface LaneAppend {
  scope: string;
  stream: string;
  lane: string;
  payload: string;
}

/** Most entries one statement adds to lanes. */
const MAX_BATCH = 1000;

/**
 * Lanes in tables (see the `broker_lanes` migrations). Appends to the lanes of one stream made
 * together share one statement, as `appendBatches` does for streams, and an admission is one
 * statement too: a lane costs a run no more round trips than the stream alone did.
 */
export function postgresLanes(handle: DatabaseHandle): LanePort {
  const db = handle.db;

  /**
   * Adds the entries to their lanes, in one statement (`broker_append_to_lanes`), the appends
   * to the lanes of one stream together (`keyedGroupCommit`). The first entry of a lane with no
   * turn out goes straight onto the stream, its first turn right behind it; the others wait in
   * their lanes, counted on the lane's row (`waiting`), whose upsert also locks it against an
   * admission of the lane at the same time.
   */
  const append = keyedGroupCommit<LaneAppend, void>(
    ({ scope, stream }) => topicOf(scope, stream),
    async (appends, topic) => {
      const { scope, stream } = appends[0] as LaneAppend;
      const items = JSON.stringify(appends.map(({ lane, payload }) => [lane, payload]));
      await guarded(() =>
        sql`
          select broker_append_to_lanes(${scope}, ${stream}, ${items}::jsonb, ${APPENDS_CHANNEL}, ${topic})`.execute(
          db,
        ),
      );
      return appends.map(() => undefined);
    },
    { maxBatch: MAX_BATCH, maxInFlight: ONE_STATEMENT_AT_A_TIME },
  );

  return {
    appendToLane(scope, stream, lane, payload) {
      try {
        assertNames({ scope, stream, lane });
      } catch (error) {
        return Promise.reject(error);
      }
      return append({ scope, stream, lane, payload });
    },

    async admitLane(scope, stream, { lane, turn }, count) {
      assertNames({ scope, stream, lane });
      assertInteger("turn", turn, 1);
      assertInteger("count", count, 1, 10_000);
      // One statement (`broker_admit_lane`), whether the lane has entries waiting or not (a
      // quiet account's turn only ends its lane). The ids it moves are picked once, as an
      // array (an `in (subquery)` was planned as a loop over the lane's whole backlog, each
      // step picking them again: a turn of a lane with thousands waiting took 80 ms). The
      // lane's row, locked, is read as its newest version even if an append committed while
      // this waited for the lock, so `waiting` counts entries this statement's snapshot may
      // not see: those stay for the next turn, which `waiting` says to give.
      const result = await guarded(() =>
        sql<{ moved: number }>`
          select broker_admit_lane(${scope}, ${stream}, ${lane}, ${turn}, ${count}, ${APPENDS_CHANNEL}, ${topicOf(scope, stream)}) as moved`.execute(
          db,
        ),
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
