import { firstIdAt, idTime } from "@platform/db";
import { sql } from "kysely";
import type { CompiledPayload } from "../templates/index.ts";
import { admitOrSkip, type ControlDeps, tellEnded } from "./run-ends.ts";
import type { ClaimedRun } from "./store.ts";

/**
 * Per-flow rate limits (`rate_limit: {limit, period_s, key?}`): of the starts of a key, at
 * most `limit` accepted within any `period_s` are taken; the others end `skipped` with the
 * reason, and run nothing. A start is judged once, the first time a worker takes it, by when
 * it was accepted (its id's time, a UUIDv7's), against the starts of its key taken before:
 * it is taken when fewer than `limit` of them were accepted less than a period before or
 * after it. Any period then holds at most `limit` taken starts, even when workers take
 * starts out of their order. The decisions of a key are made one at a time (a
 * transaction-scoped advisory lock), so the limit holds across every worker process; a
 * start taken keeps its key (`rate_key`), and a later delivery of it is taken again.
 */

/** What a rate-limited start's `end_reason` says. */
export function rateLimitedReason(rate: { limit: number; periodMs: number }, key: string | null): string {
  const per = `${rate.limit} start${rate.limit === 1 ? "" : "s"} per ${rate.periodMs / 1000} s`;
  return `rate limited: ${per}${key === null ? "" : ` for key ${JSON.stringify(key)}`}`;
}

/**
 * Takes a claimed run under its flow's rate limit (`key`: its key's value): true when it goes
 * on; false when it was skipped here (whoever waits on it told) or is no longer this
 * delivery's.
 */
export async function takeRate(
  deps: ControlDeps,
  run: ClaimedRun,
  rate: { limit: number; periodMs: number; key: CompiledPayload | null },
  key: string,
): Promise<boolean> {
  const at = idTime(run.id);
  const reason = rateLimitedReason(rate, rate.key === null ? null : key);
  const decided = await deps.db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(hashtext(${`rate_limit/${run.flowId}/${key}`}))`.execute(trx);
    // Ids bound the window, so only the day partitions it falls in are read.
    const room = sql<boolean>`(
      select count(*) from (
        select 1 from runs as o
        where o.flow_id = ${run.flowId} and o.rate_key = ${key} and o.id <> ${run.id}
          and o.id >= ${firstIdAt(at - rate.periodMs + 1)}::uuid and o.id < ${firstIdAt(at + rate.periodMs)}::uuid
        limit ${rate.limit}) as taken) < ${rate.limit}`;
    return admitOrSkip(trx, run, { column: "rate_key", key, reason }, room);
  });
  if (decided?.admitted === false) {
    await tellEnded(deps, [decided.skipped], () => `skipped: ${reason}`);
  }
  return decided?.admitted === true;
}
