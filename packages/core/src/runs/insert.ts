import type { Database, DatabaseHandle } from "@platform/db";
import { type Kysely, sql, type Transaction } from "kysely";
import { PLATFORM_SCOPE } from "../broker/port.ts";
import { isRowFault } from "../database-errors.ts";
import { type QueuedRun, REQUEUE_AFTER, type RunQueue } from "../engine/run-queue.ts";
import { DomainError } from "../errors.ts";
import { groupCommit, ONE_STATEMENT_AT_A_TIME } from "../group-commit.ts";
import type { Logger } from "../logger.ts";
import type { MetricsRecorder } from "../monitoring/recorder.ts";
import { acceptedInBackground } from "../tracing/spans.ts";

/**
 * Creating runs: the one module that writes a new row into `runs`. Every start goes through
 * it — a webhook, a gateway, a start by hand, a `flow.call`, a replay (`createRunInserter`); a
 * schedule's tick and a bulk replay (`startRunsInTransaction`); a delivery the event filter
 * left out (`recordFilteredRun`) — and each follows the same protocol (an outbox: the row is
 * the record, the run queue's entry only says what to take next):
 *
 * 1. One INSERT for a batch of runs, read from its JSON (`jsonb_to_recordset`) into the
 *    parent `runs` table, which routes each row to its day's partition by its id (a UUIDv7
 *    made now: see packages/db/src/run-partitions.ts). A run is `queued` with no
 *    `queue_reason` (it waits for nothing yet; the worker gives it one of `QUEUE_REASONS` if
 *    a slot or a throttle turn holds it). The statement reads the flow (live and the
 *    account's, else the run is not inserted) and its current revision, unless the start
 *    names one, and holds it (`for key share`, once per flow) until it commits: the flow's
 *    row is all that keeps its runs' reference (runs have no foreign keys, each row's check
 *    cost more than its insert: see migration 20261202000100_run_references_by_statement).
 * 2. A start with a delivery id claims it in `run_deliveries` in the same statement, and its
 *    run is inserted only if the claim was its own: one delivery id (a webhook's event id, a
 *    schedule's tick, a calling step) starts at most one run of a flow. A repeated start is
 *    answered with the run the first one started (see 5).
 * 3. Only once the INSERT has committed is each run appended to the run queue (its account's
 *    lane in its flow's partition), with the run as accepted (see `createRunQueue`): no
 *    worker reads a run that was not committed, and a transaction that rolls back queued
 *    nothing. The one exception is a run its start executed in place before its
 *    INSERT (`ranInPlace`, engine/in-place.ts): when it gets the revision it
 *    ran, the INSERT records it as it ended (its status, end and step records) and nothing is
 *    appended; else it is inserted and queued as any start, its execution forgotten.
 * 4. A run committed whose append fails is either withdrawn or left to the waker:
 *    - a start someone waits for (`createRunInserter`) is withdrawn, its row and delivery
 *      claim deleted, and its caller hears the broker's error (503): the sender's retry
 *      starts it again;
 *    - a start in a background transaction (`startRunsInTransaction`) has no one to tell: its
 *      row carries `wake_at` REQUEUE_AFTER ahead, so the waker queues it should the append
 *      fail or its process die first (and, as for every woken run, again each REQUEUE_AFTER
 *      until a worker's claim clears it).
 * 5. A start someone waits for carries no `wake_at` (every run would enter the waker's
 *    index and its first write take it out again, and every run waiting REQUEUE_AFTER in a
 *    backlog would be queued again), so a process that dies between its commit and its
 *    append leaves a run `queued` with no entry, and its delivery id claimed. The sender's
 *    retry (a webhook's redelivery, a `flow.call` step begun again) is the one that can
 *    tell, so a repeated start (`takeOver`) looks at the run it is answered with: one no
 *    worker has taken and that waits for nothing of its own (`queued`, no `held_by`,
 *    `wake_at` or `queue_reason`) is handed to the waker (`wake_at` REQUEUE_AFTER ahead)
 *    and, once STRANDED_AFTER old, appended again before the answer. Handed to the waker,
 *    it is never withdrawn (step 4 deletes only rows without `wake_at`): the first start may
 *    still be appending, and its append may yet fail, but the retry was told the run is
 *    accepted. A second entry for a run is harmless, as the recovery's are: one delivery
 *    holds a run at a time (a worker's claim takes it only while no other entry's delivery
 *    does), and an ended run is never claimed again. A run gets at most one entry from its
 *    retries: the first sets `wake_at`, which the later ones find.
 */

export const newRunId = () => Bun.randomUUIDv7();

/**
 * How long after its acceptance (by the database's clock) a run no worker has taken is
 * appended again by a repeated start (step 5). A start appends its run within milliseconds of its commit
 * (one broker call, sent with its tick's others), so a retry racing the first start (two
 * deliveries of one event at once) finds it younger and adds no entry: the waker stands
 * behind it should its start die. Older, its start is taken to have died: a run appended and
 * merely waiting in a backlog gets one more entry, which costs one claim that finds nothing.
 * The run queue's recovery waits as long for starts between their INSERT and their append.
 */
const STRANDED_AFTER = "5 seconds";

/** A run to create, as a start describes it. */
export interface NewRun {
  /** `newRunId()`: made now, so its day's partition exists. */
  id: string;
  accountId: string;
  flowId: string;
  /** The trigger data as JSON text. */
  trigger: string;
  /** The flow revision to run; absent, the flow's current one. */
  revision?: number;
  /** The run this one replays, and the bulk replay that made it. */
  replayOf?: string;
  replayJobId?: string;
  /** Claimed by the INSERT: a second start with the same one for the flow starts nothing. */
  deliveryId?: string;
  /** The process waiting for the outcome (wait mode). */
  waiter?: string;
  /** The run whose `flow.call` step starts this one, and how deep the calls go. */
  parent?: { runId: string; depth: number };
  /** Its acceptance span's `traceparent` (tracing/spans.ts), which its later spans continue. */
  traceparent?: string | null;
  /** The run as the starting process executed it (engine/in-place.ts): recorded so if it gets that revision (step 3). */
  ranInPlace?: RanInPlace;
}

/** A run a start executed before recording it (engine/in-place.ts). */
export interface RanInPlace {
  /** The revision it ran. */
  revision: number;
  /** Its end (null: it parked). */
  end: { status: "succeeded" | "failed"; output: unknown; response: unknown; error: string | null } | null;
  /**
   * What its INSERT records: `{status, error, wake_at, waiting_on, finished, recorded_bytes,
   * took_ms, steps}` as JSON, each step as a write sends it (store.ts, `stepRow`).
   */
  record: string;
}

/** A run with its row as the INSERT reads it (JSON text: a start's shared statement embeds it as it is). */
export interface RunRow {
  run: NewRun;
  json: string;
}

/** A run its INSERT wrote, under the revision it runs. */
export interface InsertedRun {
  run: NewRun;
  revision: number;
}

export interface StartedRun {
  runId: string;
  /** True when the delivery id had started a run already: `runId` is that run, nothing new was queued. */
  duplicate: boolean;
  /** The flow revision a new run runs. */
  revision?: number;
  /** A new run recorded as its start executed it (`ranInPlace`), not queued. */
  inPlace?: RanInPlace;
}

export function runRow(run: NewRun): RunRow {
  const json = `${JSON.stringify({
    id: run.id,
    account_id: run.accountId,
    flow_id: run.flowId,
    revision: run.revision ?? null,
    replay_of: run.replayOf ?? null,
    replay_job_id: run.replayJobId ?? null,
    delivery_id: run.deliveryId ?? null,
    waiter: run.waiter ?? null,
    parent_run_id: run.parent?.runId ?? null,
    call_depth: run.parent?.depth ?? null,
    traceparent: run.traceparent ?? null,
    in_place_revision: run.ranInPlace?.revision ?? null,
  }).slice(0, -1)},${run.ranInPlace ? `"ran":${run.ranInPlace.record},` : ""}"trigger":${run.trigger}}`;
  return { run, json };
}

/** How the rows of one INSERT start: queued (waited for, or with the waker behind them), or ended at once. */
type Entering = "queued" | "queued-for-waker" | "filtered";

/** A row the INSERT wrote: the revision its run runs, and whether it was recorded as its start executed it. */
interface Inserted {
  revision: number;
  ranInPlace: boolean;
}

/**
 * Step 1 and 2 of the protocol: one statement, the function `run_insert` (migration
 * 20261204000100, whose plan the session keeps). A run its start executed in place (`ran`)
 * is recorded as it ended, with its step records, when it gets the revision it ran;
 * otherwise, and for every other start, as the protocol says. Answers what it inserted, by id.
 */
async function insertRows(db: Kysely<Database>, rows: RunRow[], entering: Entering): Promise<Map<string, Inserted>> {
  const { rows: inserted } = await sql<{ inserted_id: string; inserted_revision: number; in_place: boolean }>`
    select inserted_id, inserted_revision, in_place
    from run_insert(${`[${rows.map((row) => row.json).join(",")}]`}::jsonb, ${entering}, ${REQUEUE_AFTER}::interval)`.execute(
    db,
  );
  return new Map(
    inserted.map((row) => [row.inserted_id, { revision: row.inserted_revision, ranInPlace: row.in_place }]),
  );
}

type QueueDeps = { runQueue: RunQueue; metrics: MetricsRecorder };

/** Step 3, once the INSERT has committed: each run appended to its account's lane; counted as started. */
async function queueInserted(deps: QueueDeps, inserted: InsertedRun[]): Promise<void> {
  await Promise.all(
    inserted.map(({ run, revision }) => deps.runQueue.append({ ...run, revision, waiter: run.waiter ?? null })),
  );
  countStarted(deps, inserted);
}

function countStarted(deps: Pick<QueueDeps, "metrics">, inserted: InsertedRun[]): void {
  const started = new Map<string, number>();
  for (const { run } of inserted) started.set(run.accountId, (started.get(run.accountId) ?? 0) + 1);
  for (const [account, count] of started) deps.metrics.count(account, "runs.started", count);
  if (inserted.length > 0) deps.metrics.count(PLATFORM_SCOPE, "runs.started", inserted.length);
}

/** What one start's share of a batch INSERT did: wrote its row, or did not (see `notStarted`). */
type Written = ({ written: true } & Inserted) | StartedRun | { failure: unknown };

/**
 * Starts someone waits for (a webhook's sender, a gateway's caller, a `flow.call` step):
 * `insert` writes the run and queues it, and resolves once both are durable. Starts arriving
 * while an INSERT is in flight share the next one (one statement and one commit for all
 * their rows); as soon as it commits, each run's append goes out, and the Broker sends the
 * appends of one tick together (Redis auto-pipelining, PostgreSQL's append batches). One
 * INSERT at a time: the batch that gathers behind a commit is what keeps commits (and their
 * WAL flushes) few under load, and an idle inserter writes at once. A run whose append fails
 * is withdrawn (step 4) and the append's error thrown; a flow that is not the account's (or
 * deleted) throws `not_found`, a row PostgreSQL refuses for its values `validation_error`
 * (400); a delivery id that started a run already answers that run, queued again first
 * should its start have stopped before queueing it (step 5).
 */
export function createRunInserter(deps: {
  database: DatabaseHandle;
  runQueue: RunQueue;
  metrics: MetricsRecorder;
  logger: Logger;
}) {
  const db = deps.database.db;

  async function writeRows(rows: RunRow[]): Promise<Written[]> {
    const written = await insertRows(db, rows, "queued");
    return Promise.all(
      rows.map((row): Written | Promise<Written> => {
        const inserted = written.get(row.run.id);
        return inserted === undefined ? notStarted(row.run) : { written: true, ...inserted };
      }),
    );
  }

  /** Why a row was not inserted: its delivery started a run already, or the flow is not there. */
  async function notStarted(run: NewRun): Promise<Written> {
    if (run.deliveryId !== undefined) {
      const existing = await db
        .selectFrom("run_deliveries as d")
        .innerJoin("flows as f", "f.id", "d.flow_id")
        .select("d.run_id as id")
        .where("d.flow_id", "=", run.flowId)
        .where("f.account_id", "=", run.accountId)
        .where("d.delivery_id", "=", run.deliveryId)
        .executeTakeFirst();
      if (existing) return { runId: existing.id, duplicate: true };
    }
    return { failure: new DomainError("not_found", "flow not found") };
  }

  async function withdrawRows(ids: string[]): Promise<boolean[]> {
    // The delivery ids they claimed go with them: the sender's retry must start a run. A run
    // a repeated start took over meanwhile (step 5: its `wake_at` set) stays, the waker's.
    await sql`
      with gone as (
        delete from runs where id = any(${ids}::uuid[]) and wake_at is null returning id, flow_id, delivery_id)
      delete from run_deliveries d using gone
      where d.flow_id = gone.flow_id and d.delivery_id = gone.delivery_id and d.run_id = gone.id`.execute(db);
    return ids.map(() => true);
  }

  /**
   * Step 5, for a start answered with `runId`: a run no worker has taken and that waits for
   * nothing of its own is handed to the waker, and appended again when STRANDED_AFTER old.
   * Throws the append's error (the run is the waker's by then).
   */
  async function takeOver(runId: string): Promise<void> {
    const { rows } = await sql<QueuedRun & { stranded: boolean }>`
      update runs set wake_at = now() + ${REQUEUE_AFTER}::interval
      where id = ${runId} and status = 'queued' and held_by is null and wake_at is null and queue_reason is null
      returning id, flow_id as "flowId", account_id as "accountId",
        created_at < now() - ${STRANDED_AFTER}::interval as stranded`.execute(db);
    const stranded = rows.filter((row) => row.stranded);
    if (stranded.length === 0) return;
    deps.logger.warn(
      { runs: stranded.map((row) => row.id) },
      "a repeated start found its run untaken past STRANDED_AFTER (its start may have stopped before queueing it): queued again",
    );
    await deps.runQueue.requeue(stranded);
  }

  const write = groupCommit<RunRow, Written>(writeRows, {
    maxBatch: 500,
    maxInFlight: ONE_STATEMENT_AT_A_TIME,
    maxBytes: 4 * 1024 * 1024,
    sizeOf: (row) => row.json.length,
  });
  // A run that could not be queued was never accepted: its row goes (several at once while the Broker is down).
  const withdraw = groupCommit<string, boolean>(withdrawRows, {
    maxBatch: 500,
    maxInFlight: ONE_STATEMENT_AT_A_TIME,
  });

  return {
    /** Writes the run and queues it. */
    async insert(row: RunRow): Promise<StartedRun> {
      const written = await write(row).catch((error: unknown) => {
        // Written alone (see groupCommit), and still refused: this start's data is at fault, not the database.
        if (isRowFault(error)) {
          throw new DomainError("validation_error", "invalid input: the trigger data cannot be stored", {
            cause: error,
          });
        }
        throw error;
      });
      if ("failure" in written) throw written.failure;
      if (!("written" in written)) {
        await takeOver(written.runId);
        return written;
      }
      const { revision } = written;
      if (written.ranInPlace) {
        countStarted(deps, [{ run: row.run, revision }]);
        return { runId: row.run.id, duplicate: false, revision, inPlace: row.run.ranInPlace };
      }
      try {
        await queueInserted(deps, [{ run: row.run, revision }]);
      } catch (error) {
        // The database failing too must not turn this into another error: the caller hears why it was not queued.
        await withdraw(row.run.id).catch((cause: unknown) => {
          deps.logger.error(
            { err: cause, runs: [row.run.id] },
            "runs answered 503 could not be deleted; they stay queued",
          );
        });
        throw error;
      }
      return { runId: row.run.id, duplicate: false, revision };
    },
  };
}

export type RunInserter = ReturnType<typeof createRunInserter>;

/** Inserts runs within a background start's transaction (one statement a call); answers those it inserted. */
export type InsertRuns = (runs: NewRun[]) => Promise<InsertedRun[]>;

/**
 * Starts no one waits for (a schedule's ticks, a bulk replay's page): `work` runs in a
 * transaction, writing what else goes with the runs (a flow's next tick, a job's cursor)
 * and inserting them with `insert`; once the transaction has committed, the runs it inserted
 * are queued. Their rows carry `wake_at` (step 4): a run committed is queued by this call or,
 * should it fail or its process die first, by the waker; a transaction that rolls back
 * (`work` throwing) leaves neither a row nor an entry. Answers what `work` answered.
 */
export async function startRunsInTransaction<T>(
  deps: QueueDeps & { db: Kysely<Database> },
  via: "schedule" | "replay",
  work: (trx: Transaction<Database>, insert: InsertRuns) => Promise<T>,
): Promise<T> {
  const inserted: InsertedRun[] = [];
  const traced = (run: NewRun): NewRun => ({
    ...run,
    traceparent: acceptedInBackground(via, { "platform.run.id": run.id, "platform.flow.id": run.flowId }),
  });
  const result = await deps.db.transaction().execute((trx) =>
    work(trx, async (runs) => {
      if (runs.length === 0) return [];
      const rows = runs.map((run) => runRow(traced(run)));
      const written = await insertRows(trx, rows, "queued-for-waker");
      const these = rows.flatMap(({ run }) => {
        const inserted = written.get(run.id);
        return inserted === undefined ? [] : [{ run, revision: inserted.revision }];
      });
      inserted.push(...these);
      return these;
    }),
  );
  await queueInserted(deps, inserted);
  return result;
}

/**
 * Records a delivery the trigger's event filter left out as a run that is final from the
 * start (`filtered`): inserted as every run is, never queued nor counted as started. False
 * when the flow is not the account's (or deleted).
 */
export async function recordFilteredRun(db: Kysely<Database>, run: NewRun): Promise<boolean> {
  return (await insertRows(db, [runRow(run)], "filtered")).has(run.id);
}
