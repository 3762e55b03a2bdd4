import type { Database, DatabaseHandle } from "@platform/db";
import { type Expression, type Kysely, type SqlBool, sql } from "kysely";
import type { Broker } from "../broker/port.ts";
import { passOnSlots } from "../engine/concurrency.ts";
import type { RunEvents } from "../engine/events.ts";
import { isFinal, type RespondOutput, type StepRecords } from "../engine/records.ts";
import { cancelRuns, tellEnded } from "../engine/run-ends.ts";
import type { RunQueue } from "../engine/run-queue.ts";
import { createRunWaiters, type RunDone } from "../engine/waiting.ts";
import { DomainError } from "../errors.ts";
import type { AccountLimits } from "../limits/account-limits.ts";
import type { Logger } from "../logger.ts";
import { countRunEnd, type MetricsRecorder } from "../monitoring/recorder.ts";
import { acceptedIds, acceptedWithin } from "./accepted-range.ts";
import { newRunId, type RanInPlace, recordFilteredRun, type StartedRun } from "./insert.ts";
import { requireLiveFlow } from "./live-flow.ts";
import { createRunStarter, type StartRunInput } from "./start.ts";
import { triggerHolds } from "./trigger-search.ts";
import {
  outlineSteps,
  type RunDetail,
  type RunSummary,
  type RunView,
  runResult,
  runSummary,
  runView,
  SUMMARY_COLUMNS,
  type SummaryRow,
} from "./views.ts";

/** How a run ended, as wait mode answers it. */
export type RunOutcome =
  /** `response`: the `respond` step's, else 200 with the last step's output as the body. */
  | { status: "succeeded"; runId: string; response: RespondOutput }
  | { status: "failed"; runId: string; error: string }
  /** Still running when the wait was over. */
  | { status: "timeout"; runId: string }
  /** The delivery id had started `runId` already; nothing was started. */
  | { status: "duplicate"; runId: string };

export interface ListRunsQuery {
  status?: RunView["status"];
  /** Accepted at or after / before. */
  from?: Date;
  to?: Date;
  /** `next_cursor` of the previous page. */
  cursor?: string;
  limit?: number;
  /** Only runs whose trigger data holds `equals` at the dotted path `where`. */
  where?: string;
  equals?: string;
}

export interface RunsService {
  /** Records the run and queues it; resolves once both are durable. `not_found` for a flow the account does not have. */
  start(input: StartRunInput): Promise<StartedRun>;
  /** Starts a run and waits up to `timeoutMs` for its end. */
  startAndWait(input: StartRunInput, timeoutMs: number): Promise<RunOutcome>;
  /** Whether `startAndWait` runs the account's flow's `revision` in this process (engine/in-place.ts): its answer comes at once. */
  waitsInPlace(accountId: string, flowId: string, revision: number): boolean;
  /** How a run ended (its output when it succeeded), or null while it has not. */
  outcome(
    accountId: string,
    runId: string,
  ): Promise<{ status: "succeeded" | "failed"; output: unknown; error: string | null } | null>;
  /** The run, with the steps of for-each items `itemsFrom` to `itemsFrom + 99`. */
  get(accountId: string, runId: string, itemsFrom?: number): Promise<RunView>;
  /** A flow's runs, or (flowId null) every run of the account, newest first. */
  list(
    accountId: string,
    flowId: string | null,
    query: ListRunsQuery,
  ): Promise<{ data: RunSummary[]; next_cursor: string | null }>;
  /**
   * Records a delivery the trigger's event filter left out, as a run that is final from the
   * start (`filtered`): visible in the flow's runs, never queued. Answers its id.
   */
  recordFiltered(input: Pick<StartRunInput, "accountId" | "flowId" | "trigger">): Promise<string>;
  /**
   * Ends a queued, waiting or running run `cancelled` (a run already ended stays as it was) and
   * answers it. A step under way is not interrupted, but its worker can write nothing more of
   * it: its result is discarded and no further step starts.
   */
  cancel(accountId: string, runId: string): Promise<RunView>;
  /** A new run of the same flow with the same trigger data, linked to the original. */
  replay(accountId: string, runId: string): Promise<StartedRun>;
  close(): Promise<void>;
}

/** A run a start executes before recording it (engine/in-place.ts): as accepted. */
export interface InPlaceRun {
  id: string;
  accountId: string;
  flowId: string;
  revision: number;
  trigger: unknown;
  /** The process waiting for its outcome; null for a start no one waits for. */
  waiter: string | null;
  traceparent: string | null;
}

/**
 * Executes runs of flows that only compute in the process that accepted them
 * (engine/in-place.ts): `revisionOf` names the flow's revision it executes, when known.
 */
export interface InPlaceRunner {
  /** The revision of the account's flow this process executes in place, if it knows one. */
  revisionOf(accountId: string, flowId: string): number | undefined;
  /** A start of the account's flow was given `revision`: learns whether its runs may run in place. */
  learn(accountId: string, flowId: string, revision: number): void;
  /** Executes the run, writing nothing; null when it cannot be (it is queued then). */
  runAhead(run: InPlaceRun, signal: AbortSignal): Promise<RanInPlace | null>;
}

export interface RunsDeps {
  database: DatabaseHandle;
  db: Kysely<Database>;
  broker: Broker;
  runQueue: RunQueue;
  metrics: MetricsRecorder;
  logger: Logger;
  /** The largest trigger data, in bytes of JSON (TRIGGER_MAX_BYTES). */
  triggerMaxBytes: number;
  /** Accounts' plans: runs started per minute. */
  limits: AccountLimits;
  /** Wakes the run a cancelled `flow.call` child was called by. */
  events: Pick<RunEvents, "wake">;
  /** Executes runs of flows that only compute where they were accepted; absent, every run is queued. */
  inPlace?: InPlaceRunner;
}

/**
 * The signal a start no one waits for executes in place under: already aborted, so the run
 * waits for nothing there. A step whose retry would wait, even a backoff short enough for a
 * wait-mode start to wait in place, sends the run to the workers instead (its execution
 * forgotten), and its acknowledgement never waits on a backoff.
 */
const WAITS_FOR_NOTHING = AbortSignal.abort();

const runNotFound = () => new DomainError("not_found", "run not found");
const flowNotFound = () => new DomainError("not_found", "flow not found");

/** What wait mode answers for a run that succeeded. */
export function successResponse(output: unknown, response: unknown): RespondOutput {
  if (response && typeof response === "object" && "status" in response) return response as RespondOutput;
  return { status: 200, headers: {}, body: output ?? null };
}

export function createRunsService(deps: RunsDeps): RunsService {
  const start = createRunStarter(deps);
  const waiters = createRunWaiters(deps.broker);
  const { db } = deps;

  function outcomeOf(done: Pick<RunDone, "status" | "output" | "response" | "error"> & { id: string }): RunOutcome {
    return done.status === "succeeded"
      ? { status: "succeeded", runId: done.id, response: successResponse(done.output, done.response) }
      : { status: "failed", runId: done.id, error: done.error ?? "the run failed" };
  }

  /**
   * The run's row with its step records, read in one statement: one snapshot, so the row's
   * status and the steps agree (a run's write changes both in one statement too). The steps
   * are named by the run's id itself, not the row's column: the planner then reads one
   * partition of `run_steps` (the run's day), where a correlated reference planned every one.
   */
  async function findRunWithSteps(accountId: string, runId: string) {
    const row = await db
      .selectFrom("runs")
      .selectAll()
      .select(
        sql<StepRecords | null>`(
        select jsonb_object_agg(s.name, case when s.output is null then s.record
          else s.record || jsonb_build_object('output', s.output) end)
        from run_steps as s where s.run_id = ${runId})`.as("step_records"),
      )
      .where("id", "=", runId)
      .where("account_id", "=", accountId)
      .executeTakeFirst();
    if (!row) throw runNotFound();
    const { step_records, ...run } = row;
    const records: StepRecords = step_records ?? {};
    // An output of null is stored as none (a skipped step's too).
    for (const record of Object.values(records)) {
      if ((record.status === "succeeded" || record.status === "skipped") && record.output === undefined) {
        record.output = null;
      }
    }
    return { row: run, records };
  }

  /** A run's detail: its step records, and its revision's steps in order. */
  async function readDetail(row: { flow_id: string; revision: number }, records: StepRecords): Promise<RunDetail> {
    const revision = await db
      .selectFrom("flow_revisions")
      .select(["steps", "on_failure"])
      .where("flow_id", "=", row.flow_id)
      .where("revision", "=", row.revision)
      .executeTakeFirst();
    const order = revision ? outlineSteps(revision.steps, revision.on_failure) : [];
    return { records, order };
  }

  /** A page of runs newest first, by the function whose plan the session keeps (migration 20261208000000_runs_page). */
  async function pageOfRuns(accountId: string, flowId: string | null, query: ListRunsQuery, limit: number) {
    const { fromId, toId } = acceptedIds(query.from, query.to);
    const { rows } = await sql<SummaryRow>`
      select * from runs_page(${accountId}, ${flowId}::uuid, ${query.status ?? null}, ${query.cursor ?? null}::uuid,
        ${fromId}::uuid, ${query.from ?? null}::timestamptz, ${toId}::uuid, ${query.to ?? null}::timestamptz, ${limit})`.execute(
      db,
    );
    return rows;
  }

  /**
   * A page of the runs whose trigger data `holds` (`triggerHolds`): planned for its document at every
   * call, as the GIN index `runs_trigger_search` answers a rare value and the id order a common one.
   */
  async function searchRuns(
    accountId: string,
    flowId: string | null,
    query: ListRunsQuery,
    holds: Expression<SqlBool>,
    limit: number,
  ) {
    let select = db.selectFrom("runs").select(SUMMARY_COLUMNS).where("account_id", "=", accountId);
    // The account's runs are read along runs_account_id (account_id, id); a flow's along its own index.
    if (flowId !== null) select = select.where("flow_id", "=", flowId);
    if (query.status) select = select.where("status", "=", query.status);
    if (query.cursor) select = select.where("id", "<", query.cursor);
    return acceptedWithin(select, query.from, query.to).where(holds).orderBy("id", "desc").limit(limit).execute();
  }

  /** The outcome from the database, for a notification too large to carry it (or one that was lost). */
  async function readOutcome(accountId: string, runId: string): Promise<RunOutcome> {
    const { row, records } = await findRunWithSteps(accountId, runId);
    if (!isFinal(row.status)) return { status: "timeout", runId };
    const status = row.status === "succeeded" ? "succeeded" : "failed";
    return outcomeOf({ id: runId, status, error: row.error, ...runResult(row.status, await readDetail(row, records)) });
  }

  /**
   * Starts a run, executed where it is accepted (engine/in-place.ts) when this process knows
   * the flow's current revision runs in place: not for a start naming a revision (a replay's:
   * the revision known to run in place is the current one) or a called one (`flow.call`).
   * Learns from the start's answer which revision it runs, and
   * counts the end of a run recorded as ended.
   */
  async function startAhead(input: StartRunInput, id: string, waiter: string | null, signal: AbortSignal) {
    const { inPlace } = deps;
    const { accountId, flowId } = input;
    const revision =
      input.revision === undefined && input.parent === undefined ? inPlace?.revisionOf(accountId, flowId) : undefined;
    const trigger = input.trigger ?? null;
    const runAhead =
      inPlace && revision !== undefined
        ? (traceparent: string | null) =>
            inPlace.runAhead({ id, accountId, flowId, revision, trigger, waiter, traceparent }, signal)
        : undefined;
    const started = await start({ ...input, id, waiter: waiter ?? undefined, runAhead });
    if (started.revision !== undefined) inPlace?.learn(accountId, flowId, started.revision);
    const end = started.inPlace?.end;
    if (end) countRunEnd(deps.metrics, accountId, end.status);
    return started;
  }

  return {
    start: (input) => startAhead(input, newRunId(), null, WAITS_FOR_NOTHING),

    async startAndWait(input, timeoutMs) {
      await waiters.ready();
      const id = newRunId();
      // The start's time: its execution in place stops at it, and so does the wait for its end.
      // The wait is let go by a call, whatever answers first: an abort's event and listeners
      // were 5% of an API process's CPU under wait-mode starts run in place.
      const timeout = new AbortController();
      const waiting = waiters.wait(id);
      const timer = setTimeout(() => {
        timeout.abort();
        waiting.letGo();
      }, timeoutMs);
      try {
        const started = await startAhead(input, id, waiters.id, timeout.signal);
        if (started.duplicate) return { status: "duplicate", runId: started.runId };
        const end = started.inPlace?.end;
        if (end) return outcomeOf({ id, ...end });
        // Queued (or recorded parked): a worker tells this process its end.
        const done = await waiting.done;
        // No word in time (or a notification lost to a broker reconnect): the row has the last say.
        if (!done || !("output" in done)) return readOutcome(input.accountId, id);
        return outcomeOf(done);
      } finally {
        clearTimeout(timer);
        waiting.letGo();
      }
    },

    waitsInPlace: (accountId, flowId, revision) => deps.inPlace?.revisionOf(accountId, flowId) === revision,

    async outcome(accountId, runId) {
      const { row, records } = await findRunWithSteps(accountId, runId);
      if (row.status === "cancelled") return { status: "failed", output: null, error: "cancelled" };
      // Skipped by a flow control (a rate limit, a singleton): it ends without an outcome of its own.
      if (row.status === "skipped") return { status: "failed", output: null, error: `skipped: ${row.end_reason}` };
      if (row.status !== "succeeded" && row.status !== "failed") return null;
      const { output } = runResult(row.status, await readDetail(row, records));
      return { status: row.status, output, error: row.error };
    },

    async get(accountId, runId, itemsFrom = 0) {
      const { row, records } = await findRunWithSteps(accountId, runId);
      return runView(row, await readDetail(row, records), itemsFrom);
    },

    async list(accountId, flowId, query) {
      if (flowId !== null) await requireLiveFlow(db, accountId, flowId);
      const limit = query.limit ?? 50;
      const { where, equals } = query;
      const rows =
        where !== undefined && equals !== undefined
          ? await searchRuns(accountId, flowId, query, triggerHolds(where, equals), limit + 1)
          : await pageOfRuns(accountId, flowId, query, limit + 1);
      const page = rows.slice(0, limit);
      return {
        data: page.map(runSummary),
        next_cursor: rows.length > limit ? (page.at(-1)?.id ?? null) : null,
      };
    },

    async recordFiltered({ accountId, flowId, trigger }) {
      const id = newRunId();
      const run = { id, accountId, flowId, trigger: JSON.stringify(trigger ?? null) };
      if (!(await recordFilteredRun(db, run))) throw flowNotFound();
      return id;
    },

    async cancel(accountId, runId) {
      const cancelled = await cancelRuns(db, sql<boolean>`id = ${runId} and account_id = ${accountId}`);
      await passOnSlots(deps, cancelled);
      await tellEnded(deps, cancelled, () => "cancelled");
      const { row, records } = await findRunWithSteps(accountId, runId);
      return runView(row, await readDetail(row, records));
    },

    async replay(accountId, runId) {
      const original = await db
        .selectFrom("runs")
        .select(["flow_id", "trigger", "revision"])
        .where("id", "=", runId)
        .where("account_id", "=", accountId)
        .executeTakeFirst();
      if (!original) throw runNotFound();
      return start({
        id: newRunId(),
        accountId,
        flowId: original.flow_id,
        trigger: original.trigger,
        replayOf: runId,
        revision: original.revision,
        via: "replay",
      });
    },

    close: () => waiters.close(),
  };
}
