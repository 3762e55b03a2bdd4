import { sql } from "kysely";
import type { Services } from "../services.ts";
import type { PeriodicJob } from "../worker/periodic.ts";
import { EVENT_RETENTION_DAYS } from "./events.ts";

/** Runs queued per statement by the waker, and deleted per statement by retention. */
const PAGE = 500;

/**
 * If a woken run's entry is lost (the waker died before appending it, the broker refused),
 * it is due again this long after: the waker leaves `wake_at` there until a worker claims
 * the run.
 */
const REQUEUE_AFTER = "2 minutes";

/**
 * Queues parked runs whose time has come (a `delay` step's end, a retry's backoff), once a
 * second somewhere in the deployment. Each run's `wake_at` moves ahead before its entry is
 * appended, so two wakers never queue it together, and a worker's claim clears it.
 */
export function runWakerJob(services: Pick<Services, "db" | "runQueue">, everyMs = 1000): PeriodicJob {
  return {
    name: "run-waker",
    everyMs,
    async run({ signal }) {
      while (!signal.aborted) {
        const { rows } = await sql<{ id: string; flowId: string }>`
          update runs set wake_at = now() + ${REQUEUE_AFTER}::interval
          where id in (
            select id from runs where wake_at <= now() order by wake_at limit ${PAGE} for update skip locked)
          returning id, flow_id as "flowId"`.execute(services.db);
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

/** The smallest UUIDv7 of a moment: every run accepted before it has a smaller id. */
export function firstIdAt(epochMs: number): string {
  const hex = Math.max(0, Math.floor(epochMs)).toString(16).padStart(12, "0");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7000-8000-000000000000`;
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

/**
 * Deletes the records of runs accepted more than RUN_RETENTION_DAYS ago that have ended
 * (a run still waiting on a long `delay` stays), a page at a time, along the primary key;
 * then, for each account that keeps its runs for less (`run_retention_days`), its older
 * runs, along its `(account_id, id)` index; then the events older than any wait may be, and
 * the bulk replay jobs that ended as long ago as the oldest runs kept.
 */
export function runRetentionJob(services: Pick<Services, "db" | "config">, everyMs = 60_000): PeriodicJob {
  return {
    name: "run-retention",
    everyMs,
    async run({ signal }) {
      const { retentionDays } = services.config.runs;
      await deleteRunsBefore(services, signal, firstIdAt(Date.now() - retentionDays * 86_400_000));
      const shorter = await services.db
        .selectFrom("accounts")
        .select(["id", "run_retention_days"])
        .where("run_retention_days", "<", retentionDays)
        .execute();
      for (const account of shorter) {
        const days = account.run_retention_days ?? retentionDays;
        await deleteRunsBefore(services, signal, firstIdAt(Date.now() - days * 86_400_000), account.id);
      }
      // Events outlive the longest wait, and no more.
      while (!signal.aborted) {
        const { numAffectedRows } = await sql`
          delete from run_events where id in (
            select id from run_events where created_at < now() - ${EVENT_RETENTION_DAYS} * interval '1 day'
            order by id limit ${PAGE})`.execute(services.db);
        if (Number(numAffectedRows ?? 0) < PAGE) break;
      }
      await sql`
        delete from replay_jobs where finished_at < now() - ${retentionDays} * interval '1 day'`.execute(services.db);
    },
  };
}
