import { idTime } from "@platform/db";
import { sql } from "kysely";
import type { CompiledPayload } from "../templates/index.ts";
import { type ControlDeps, judgeStartsTogether } from "./run-ends.ts";
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
 *
 * The count is the key's tally's (see the rate_limit_tallies migration): the starts taken
 * per 64th of a period, summed over the buckets wholly inside the window, and the starts of
 * the window's two ends counted one by one, so a decision reads about 130 rows however many
 * starts the window holds. The starts a process takes together are judged in one statement
 * (a group commit), in the order they came: a key's lock is held until the commit, so
 * judging each start in a transaction of its own made every start of a key wait for the WAL
 * flush of the one before.
 */

/** What a rate-limited start's `end_reason` says. */
export function rateLimitedReason(rate: { limit: number; periodMs: number }, key: string | null): string {
  const per = `${rate.limit} start${rate.limit === 1 ? "" : "s"} per ${rate.periodMs / 1000} s`;
  return `rate limited: ${per}${key === null ? "" : ` for key ${JSON.stringify(key)}`}`;
}

/**
 * Rate-limit decisions for one process: `take` answers true when a claimed run goes on under
 * its flow's rate limit (`key`: its key's value); false when it was skipped here (whoever
 * waits on it told) or is no longer this delivery's.
 */
export function createRateLimits(deps: Pick<ControlDeps, "db" | "broker" | "events">): {
  take(
    run: Pick<ClaimedRun, "id" | "flowId" | "holder">,
    rate: { limit: number; periodMs: number; key: CompiledPayload | null },
    key: string,
  ): Promise<boolean>;
} {
  const judge = judgeStartsTogether(
    deps,
    "rate_key",
    (starts) => sql`select id, holder, key, admit, reason from rate_limit_judge(${starts}::jsonb)`,
  );
  return {
    take: (run, rate, key) =>
      judge(run, key, {
        at: idTime(run.id),
        period: rate.periodMs,
        lim: rate.limit,
        reason: rateLimitedReason(rate, rate.key === null ? null : key),
      }),
  };
}
