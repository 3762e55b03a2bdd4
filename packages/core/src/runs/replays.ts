import { type Database, firstIdAt, idTime, type ReplayJobsTable } from "@platform/db";
import { type Kysely, type Selectable, sql } from "kysely";
import { DomainError, isDomainError } from "../errors.ts";
import type { AccountLimits } from "../limits/account-limits.ts";
import type { Services } from "../services.ts";
import type { PeriodicJob } from "../worker/periodic.ts";
import { acceptedWithin } from "./accepted-range.ts";
import { newRunId, startRunsInTransaction } from "./insert.ts";
import { requireLiveFlow } from "./live-flow.ts";
import type { RUN_STATUSES } from "./schemas.ts";

/**
 * Bulk replays (`POST /flows/{id}/runs/replay`): a background job replays, oldest first,
 * every run of a flow that matches a filter and was accepted before the job (so the job
 * never matches its own replays). Each second, somewhere in the deployment, a running job
 * tops its replays still queued or running up to a window (twice the flow's concurrency
 * limit, so a freed slot finds the next replay queued; else REPLAY_WINDOW), within the
 * account's runs per minute: a replay of a thousand runs after an outage neither floods the
 * queue ahead of live traffic nor passes the plan. Each step inserts its replays and moves
 * the job's cursor in one transaction, with the job's row locked; the replays are created as
 * every run is (runs/insert.ts, `startRunsInTransaction`: queued after the commit, or by the
 * waker should the process die first): a run is replayed once by a job however many
 * processes look, and none is lost to a crash.
 */

/** Replays a job keeps queued or running at once when the flow has no concurrency limit. */
export const REPLAY_WINDOW = 100;

export interface ReplayFilter {
  status?: (typeof RUN_STATUSES)[number];
  from?: Date;
  to?: Date;
}

export interface ReplayJobView {
  id: string;
  flow_id: string;
  status: "running" | "done" | "cancelled";
  filter: { status: string | null; from: string | null; to: string | null };
  matched: number;
  started: number;
  done: number;
  created_at: string;
  finished_at: string | null;
}

type Deps = { db: Kysely<Database> };
type JobDeps = Deps & Pick<Services, "runQueue" | "metrics" | "limits">;

const replayNotFound = () => new DomainError("not_found", "replay not found");

/** The runs a job replays: the flow's, matching the filter, accepted before the job, its own replays never. */
function matchingRuns(
  db: Kysely<Database>,
  job: Pick<Selectable<ReplayJobsTable>, "id" | "account_id" | "flow_id" | "before_id" | "filter">,
) {
  const { filter } = job;
  let query = db
    .selectFrom("runs")
    .where("runs.flow_id", "=", job.flow_id)
    .where("runs.account_id", "=", job.account_id)
    .where("runs.id", "<", job.before_id)
    .where((eb) => eb.or([eb("runs.replay_job_id", "is", null), eb("runs.replay_job_id", "<>", job.id)]));
  if (filter.status) query = query.where("runs.status", "=", filter.status);
  return acceptedWithin(
    query,
    filter.from ? new Date(filter.from) : undefined,
    filter.to ? new Date(filter.to) : undefined,
  );
}

/** The smallest UUIDv7 of a minute before the one `id` was made at. */
const aMinuteBefore = (id: string) => firstIdAt(idTime(id) - 60_000);

/**
 * The job's replays still queued or running, and the id its next look may start from: the
 * oldest of them (or, none being, the newest replay). Replays are made in id order (UUIDv7,
 * by whichever process advanced the job: a minute's slack covers their clocks), so a look
 * reads only those since the oldest one that was under way at the look before.
 */
async function replaysUnderway(
  db: Kysely<Database>,
  job: Pick<Selectable<ReplayJobsTable>, "id" | "underway_from">,
): Promise<{ count: number; from: string | null }> {
  let query = db.selectFrom("runs").select(["id", "status"]).where("replay_job_id", "=", job.id);
  if (job.underway_from) query = query.where("id", ">=", aMinuteBefore(job.underway_from));
  const rows = await query.orderBy("id").execute();
  const live = rows.filter((row) => row.status === "queued" || row.status === "running");
  return { count: live.length, from: live[0]?.id ?? rows.at(-1)?.id ?? job.underway_from };
}

async function jobView(db: Kysely<Database>, job: Selectable<ReplayJobsTable>): Promise<ReplayJobView> {
  return {
    id: job.id,
    flow_id: job.flow_id,
    status: job.status,
    filter: { status: job.filter.status ?? null, from: job.filter.from ?? null, to: job.filter.to ?? null },
    matched: job.matched,
    started: job.started,
    done: job.started - (await replaysUnderway(db, job)).count,
    created_at: job.created_at.toISOString(),
    finished_at: job.finished_at?.toISOString() ?? null,
  };
}

/** Makes a job replaying the flow's runs that match `filter` now; it starts within a second. */
export async function createReplayJob(
  deps: Deps,
  accountId: string,
  flowId: string,
  filter: ReplayFilter,
): Promise<ReplayJobView> {
  await requireLiveFlow(deps.db, accountId, flowId);
  const id = newRunId();
  const stored = {
    ...(filter.status ? { status: filter.status } : {}),
    ...(filter.from ? { from: filter.from.toISOString() } : {}),
    ...(filter.to ? { to: filter.to.toISOString() } : {}),
  };
  const job = { id, account_id: accountId, flow_id: flowId, before_id: id, filter: stored };
  const { count } = await matchingRuns(deps.db, job)
    .select((eb) => eb.fn.countAll<string>().as("count"))
    .executeTakeFirstOrThrow();
  const row = await deps.db
    .insertInto("replay_jobs")
    .values({ ...job, filter: JSON.stringify(stored), matched: Number(count) })
    .returningAll()
    .executeTakeFirstOrThrow();
  return jobView(deps.db, row);
}

async function findJob(db: Kysely<Database>, accountId: string, id: string) {
  const job = await db
    .selectFrom("replay_jobs")
    .selectAll()
    .where("id", "=", id)
    .where("account_id", "=", accountId)
    .executeTakeFirst();
  if (!job) throw replayNotFound();
  return job;
}

export async function getReplayJob(deps: Deps, accountId: string, id: string): Promise<ReplayJobView> {
  return jobView(deps.db, await findJob(deps.db, accountId, id));
}

/** Stops a running job: it starts no more replays (those started go on). Idempotent. */
export async function cancelReplayJob(deps: Deps, accountId: string, id: string): Promise<ReplayJobView> {
  await deps.db
    .updateTable("replay_jobs")
    .set({ status: "cancelled", finished_at: sql`now()` })
    .where("id", "=", id)
    .where("account_id", "=", accountId)
    .where("status", "=", "running")
    .execute();
  return jobView(deps.db, await findJob(deps.db, accountId, id));
}

/** Takes up to `wanted` run starts from the account's runs per minute: as many as the plan allows now. */
async function startsAllowed(limits: AccountLimits, accountId: string, wanted: number): Promise<number> {
  for (let taken = 0; taken < wanted; taken++) {
    try {
      await limits.spend(accountId, "runs_per_minute");
    } catch (error) {
      if (isDomainError(error) && error.code === "rate_limited") return taken;
      throw error;
    }
  }
  return wanted;
}

/** How many replays the job may keep queued or running at once: twice the flow's concurrency limit, else REPLAY_WINDOW. */
async function windowOf(db: Kysely<Database>, flowId: string): Promise<{ window: number; deleted: boolean }> {
  const flow = await db
    .selectFrom("flows")
    .innerJoin("flow_revisions", (join) =>
      join.onRef("flow_revisions.flow_id", "=", "flows.id").onRef("flow_revisions.revision", "=", "flows.revision"),
    )
    .select(["flows.deleted_at", "flow_revisions.concurrency"])
    .where("flows.id", "=", flowId)
    .executeTakeFirst();
  const limit = flow?.concurrency?.limit;
  return { window: limit === undefined ? REPLAY_WINDOW : 2 * limit, deleted: !flow || flow.deleted_at !== null };
}

/**
 * Moves one job on: reads the next page of matches, takes the plan's run starts for them
 * (outside any transaction: PGlite runs one at a time, and the limits read the database),
 * then writes the replays and moves the cursor with the job's row locked, provided no
 * other process moved it meanwhile (else this turn does nothing: the job is read again next
 * second).
 */
async function advance(deps: JobDeps, job: Selectable<ReplayJobsTable>): Promise<void> {
  const { window, deleted } = await windowOf(deps.db, job.flow_id);
  const { count: underway, from: underwayFrom } = await replaysUnderway(deps.db, job);
  const room = deleted ? 0 : Math.max(0, window - underway);
  let query = matchingRuns(deps.db, job).select(["runs.id", "runs.revision", "runs.trigger"]);
  if (job.cursor) query = query.where("runs.id", ">", job.cursor);
  // One more than there is room for: whether any match is left.
  const next = deleted
    ? []
    : await query
        .orderBy("runs.id")
        .limit(room + 1)
        .execute();
  const allowed = await startsAllowed(deps.limits, job.account_id, Math.min(room, next.length));
  const page = next.slice(0, allowed);
  // Every match replayed (or the flow deleted) and none still under way: the job is done.
  const finished = next.length === 0 && underway === 0;
  await startRunsInTransaction(deps, "replay", async (trx, insertRuns) => {
    const locked = await trx
      .selectFrom("replay_jobs")
      .select("id")
      .where("id", "=", job.id)
      .where("status", "=", "running")
      .where("started", "=", job.started)
      .forUpdate()
      .skipLocked()
      .executeTakeFirst();
    if (!locked) return;
    const replays = await insertRuns(
      page.map((original) => ({
        id: newRunId(),
        accountId: job.account_id,
        flowId: job.flow_id,
        revision: original.revision,
        trigger: JSON.stringify(original.trigger),
        replayOf: original.id,
        replayJobId: job.id,
      })),
    );
    await trx
      .updateTable("replay_jobs")
      .set({
        cursor: page.at(-1)?.id ?? job.cursor,
        started: job.started + replays.length,
        underway_from: underwayFrom ?? replays[0]?.run.id ?? null,
        ...(finished ? { status: "done" as const, finished_at: sql`now()` } : {}),
      })
      .where("id", "=", job.id)
      .execute();
  });
}

/** Moves every running replay job on, once a second somewhere in the deployment. */
export function replayJobsJob(deps: JobDeps, everyMs = 1000): PeriodicJob {
  return {
    name: "replay-jobs",
    everyMs,
    async run({ signal }) {
      const running = await deps.db
        .selectFrom("replay_jobs")
        .selectAll()
        .where("status", "=", "running")
        .orderBy("id")
        .limit(100)
        .execute();
      for (const job of running) {
        if (signal.aborted) return;
        await advance(deps, job);
      }
    },
  };
}
