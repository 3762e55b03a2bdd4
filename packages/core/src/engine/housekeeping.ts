import { addRunPartitions, dropRunPartitionsBefore, firstIdAt, firstIdOfDay } from "@platform/db";
import { sql } from "kysely";
import { messageOf } from "../errors.ts";
import type { Services } from "../services.ts";
import type { PeriodicJob } from "../worker/periodic.ts";
import { EVENT_RETENTION_DAYS } from "./events.ts";
import { type QueuedRun, REQUEUE_AFTER } from "./run-queue.ts";
import { MAX_THROTTLE_PERIOD_S } from "./throttle.ts";

/** Runs queued per statement by the waker, and deleted per statement by retention. */
const PAGE = 500;

/**
 * Queues parked runs whose time has come (a `delay` step's end, a retry's backoff, a background
 * start's fallback: see runs/insert.ts), once a second somewhere in the deployment. Each run's
 * `wake_at` moves REQUEUE_AFTER ahead before its entry is appended, so two wakers never queue
 * it together and an entry lost (the waker died before appending it, the broker refused) is
 * appended again then; a worker's claim clears it.
 */
export function runWakerJob(services: Pick<Services, "db" | "runQueue">, everyMs = 1000): PeriodicJob {
  return {
    name: "run-waker",
    everyMs,
    async run({ signal }) {
      while (!signal.aborted) {
        const { rows } = await sql<QueuedRun>`
          update runs set wake_at = now() + ${REQUEUE_AFTER}::interval
          where id in (
            select id from runs where wake_at <= now() order by wake_at limit ${PAGE} for update skip locked)
          returning id, flow_id as "flowId", account_id as "accountId"`.execute(services.db);
        await services.runQueue.requeue(rows);
        if (rows.length < PAGE) return;
      }
    },
  };
}

/**
 * Removes the run stream's entries every worker is done with (acknowledged; the run's
 * record is in the database): the stream holds only queued and running work.
 */
export function runStreamTrimJob(services: Pick<Services, "broker" | "runQueue">, everyMs = 10_000): PeriodicJob {
  return {
    name: "run-stream-trim",
    everyMs,
    async run() {
      for (const { scope, stream } of services.runQueue.partitions)
        await services.broker.trimAcknowledged(scope, stream);
    },
  };
}

/** Deletes, a page at a time along the primary key, the ended runs (of one account) accepted before `before`. */
async function deleteRunsBefore(
  services: Pick<Services, "db">,
  signal: AbortSignal,
  before: string,
  accountId?: string,
): Promise<void> {
  const ofAccount = accountId === undefined ? sql`` : sql`and account_id = ${accountId}`;
  while (!signal.aborted) {
    const { numAffectedRows } = await sql`
      delete from runs where id in (
        select id from runs where id < ${before}::uuid ${ofAccount} and status not in ('queued', 'running')
        order by id limit ${PAGE})`.execute(services.db);
    if (Number(numAffectedRows ?? 0) < PAGE) return;
  }
}

/** How far ahead of today the partitions of runs are made: days a stopped worker fleet may lose before inserts fail. */
export const RUN_PARTITIONS_AHEAD_DAYS = 7;

/**
 * Makes the daily partitions of runs and their steps (packages/db/src/run-partitions.ts) up
 * to RUN_PARTITIONS_AHEAD_DAYS ahead, once every ten minutes somewhere in the deployment:
 * a day's partition exists a week before its first run.
 */
export function runPartitionsJob(services: Pick<Services, "db" | "logger">, everyMs = 600_000): PeriodicJob {
  return {
    name: "run-partitions",
    everyMs,
    async run() {
      const created = await addRunPartitions(services.db, Date.now() + RUN_PARTITIONS_AHEAD_DAYS * 86_400_000);
      if (created.length > 0) services.logger.info({ partitions: created }, "partitions of runs added");
    },
  };
}

/**
 * Past RUN_RETENTION_DAYS, runs go a day at a time: a day's partitions of runs and their
 * steps are dropped whole once the whole day is older than that, unless a run in it is still
 * queued or running (one waiting on a long `delay`); then its ended runs are deleted row by
 * row, a page at a time, and the partition goes once its last run ends. An account that keeps
 * its runs for less (`run_retention_days`) has its older ones deleted row by row, along its
 * `(account_id, id)` index. Then go the events older than any wait may be, the throttle
 * turns older than any period, and the bulk replay jobs that ended as long ago as the oldest
 * runs kept.
 */
export function runRetentionJob(services: Pick<Services, "db" | "config" | "logger">, everyMs = 60_000): PeriodicJob {
  return {
    name: "run-retention",
    everyMs,
    async run({ signal }) {
      const { retentionDays } = services.config.runs;
      const cutoff = Date.now() - retentionDays * 86_400_000;
      // A partition whose lock was not had in time goes on a later turn; the rest of retention goes on now.
      const dropped = await dropRunPartitionsBefore(services.db, cutoff).catch((error: unknown) => {
        services.logger.warn({ err: messageOf(error) }, "partitions of runs past retention not dropped this time");
        return [];
      });
      if (dropped.length > 0)
        services.logger.info({ partitions: dropped }, "partitions of runs past retention dropped");
      // What is left before the day of the cutoff: the kept partitions' ended runs.
      await deleteRunsBefore(services, signal, firstIdOfDay(cutoff));
      const shorter = await services.db
        .selectFrom("accounts")
        .select(["id", "run_retention_days"])
        .where("run_retention_days", "<", retentionDays)
        .execute();
      for (const account of shorter) {
        const days = account.run_retention_days ?? retentionDays;
        await deleteRunsBefore(services, signal, firstIdAt(Date.now() - days * 86_400_000), account.id);
      }
      // Events outlive the longest wait, and no more; each gives its account back the bytes it counted for.
      while (!signal.aborted) {
        const { rows } = await sql<{ deleted: number }>`
          with gone as (
            delete from run_events where id in (
              select id from run_events where created_at < now() - ${EVENT_RETENTION_DAYS} * interval '1 day'
              order by id limit ${PAGE})
            returning account_id, bytes
          ), given_back as (
            update account_storage as s set event_bytes = s.event_bytes - g.bytes
            from (select account_id, sum(bytes) as bytes from gone group by account_id) as g
            where s.account_id = g.account_id
          )
          select count(*)::integer as deleted from gone`.execute(services.db);
        if (Number(rows[0]?.deleted ?? 0) < PAGE) break;
      }
      // A throttle turn a period past holds no later turn back; the longest period is a day.
      while (!signal.aborted) {
        const { numAffectedRows } = await sql`
          delete from throttle_turns where (flow_id, throttle_key, seq) in (
            select flow_id, throttle_key, seq from throttle_turns
            where at < now() - ${MAX_THROTTLE_PERIOD_S} * interval '1 second'
            order by at limit ${PAGE})`.execute(services.db);
        if (Number(numAffectedRows ?? 0) < PAGE) break;
      }
      await sql`
        delete from replay_jobs where finished_at < now() - ${retentionDays} * interval '1 day'`.execute(services.db);
    },
  };
}
