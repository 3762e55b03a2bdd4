import type { Database } from "@platform/db";
import { type Kysely, sql } from "kysely";
import { groupCommit, ONE_STATEMENT_AT_A_TIME } from "../group-commit.ts";
import type { QueueReason } from "./queue-reasons.ts";
import { MAX_STARTS_JUDGED_TOGETHER } from "./run-ends.ts";
import type { ClaimedRun } from "./store.ts";

/**
 * Per-flow throttles (`throttle: {limit, period_s, key?}`): at most `limit` runs of a key
 * start in any period. A run is given its turn once, the first time a worker takes it:
 * now, or, when `limit` turns of its key fall within the last period, one period after the
 * `limit`-th latest turn (whichever is later). Any window of one period then holds at most
 * `limit` turns, however the turns interleave, and a run whose turn lies ahead waits
 * `queued` until then (`wake_at` = its turn), so the excess starts in order, at the pace
 * the throttle allows, without workers trying again and again. Turns are given one at a
 * time per flow and key (a transaction-scoped advisory lock), so the throttle holds across
 * every worker process. A turn given to a run that is then cancelled stays spent.
 *
 * Turns are numbered per key (`throttle_seq`) and given in the order of their times (a turn
 * is never before the key's latest one), so the `limit`-th latest is the turn numbered
 * `limit` back: two lookups in an index, however large `limit` is. After a revision raises
 * the limit, turns already given in the future still come first. The turns are kept apart
 * from the runs (`throttle_turns`), for as long as a later turn may be judged by them.
 */

/** A throttle's longest period: a day. A turn a day past holds no later turn back (the throttle_turns migration). */
export const MAX_THROTTLE_PERIOD_S = 86_400;

const WAITING_FOR_THROTTLE: QueueReason = "throttle";

interface TurnAsk {
  run: Pick<ClaimedRun, "id" | "flowId" | "holder">;
  throttle: { limit: number; periodMs: number };
  key: string;
}

/**
 * Throttle turns for one process: `take` gives a claimed run its turn, or reads the one it
 * has: true when the turn has come and it may go on; false when it waits (its claim is given
 * back; it is `queued` again unless it had begun, with the reason, until its turn) or is no
 * longer this delivery's. The starts the process takes together get their turns in one
 * statement (`throttle_take`, a group commit), in the order they came.
 */
export function createThrottles(db: Kysely<Database>): {
  take(run: TurnAsk["run"], throttle: TurnAsk["throttle"], key: string): Promise<boolean>;
} {
  const take = groupCommit<TurnAsk, boolean>(
    async (asks) => {
      const items = asks.map(({ run, throttle, key }) => ({
        run: run.id,
        holder: run.holder,
        flow: run.flowId,
        key,
        lim: throttle.limit,
        period_ms: throttle.periodMs,
      }));
      const { rows } = await sql<{ id: string; due: boolean }>`
        select id, due from throttle_take(${JSON.stringify(items)}::jsonb, ${WAITING_FOR_THROTTLE})`.execute(db);
      const due = new Map(rows.map((row) => [row.id, row.due]));
      return asks.map(({ run }) => due.get(run.id) === true);
    },
    { maxBatch: MAX_STARTS_JUDGED_TOGETHER, maxInFlight: ONE_STATEMENT_AT_A_TIME },
  );
  return { take: (run, throttle, key) => take({ run, throttle, key }) };
}
