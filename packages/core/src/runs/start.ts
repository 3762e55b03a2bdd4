import type { DatabaseHandle } from "@platform/db";
import { sql } from "kysely";
import { PLATFORM_SCOPE } from "../broker/port.ts";
import { isRowFault } from "../database-errors.ts";
import type { RunQueue } from "../engine/run-queue.ts";
import { DomainError } from "../errors.ts";
import { groupCommit, ONE_STATEMENT_AT_A_TIME } from "../group-commit.ts";
import { isStorableJson } from "../input-guard.ts";
import type { AccountLimits } from "../limits/account-limits.ts";
import type { Logger } from "../logger.ts";
import type { MetricsRecorder } from "../monitoring/recorder.ts";
import { UUID } from "../schemas.ts";

export interface StartRunInput {
  accountId: string;
  flowId: string;
  /** The trigger data (any JSON; a webhook's is an object). */
  trigger: unknown;
  /** The run this one replays. */
  replayOf?: string;
  /** The webhook delivery id: a second start with the same one for the flow starts nothing. */
  deliveryId?: string;
  /** The flow revision to run; absent, the flow's current one (a replay runs the one its original ran). */
  revision?: number;
  /** The run whose `flow.call` step starts this one, and how deep the calls go. */
  parent?: { runId: string; depth: number };
}

export interface StartedRun {
  runId: string;
  /** True when the delivery id had started a run already: `runId` is that run, nothing new was queued. */
  duplicate: boolean;
}

/** A start as written: the id is chosen first, so a waiter can listen before the run is queued. */
export interface QueuedStart extends StartRunInput {
  id: string;
  /** The process waiting for the outcome (wait mode). */
  waiter?: string;
}

interface Row {
  json: string;
  /** The trigger data as JSON (part of `json`), carried by the run's entry when small enough. */
  trigger: string;
  input: QueuedStart;
}

/** What the INSERT did for one start: wrote its row (under the revision asked, else the flow's current one), or did not (see `notStarted`). */
type Inserted = { written: true; revision: number } | StartedRun | { failure: unknown };

export const newRunId = () => Bun.randomUUIDv7();

/**
 * Trigger data up to this size (JSON) travels in the run's stream entry, so that the worker
 * runs it without reading the row first; larger trigger data stays in the row only.
 */
export const MAX_ENTRY_TRIGGER_BYTES = 8 * 1024;

/** The run stream entry of a run just accepted (see `runEntrySchema`). */
function entryOf(row: Row, revision: number): string {
  const { input } = row;
  if (row.trigger.length > MAX_ENTRY_TRIGGER_BYTES) return JSON.stringify({ run: input.id });
  const start = JSON.stringify({
    account: input.accountId,
    flow: input.flowId,
    revision,
    waiter: input.waiter ?? null,
    ...(input.parent ? { parent: input.parent.runId, depth: input.parent.depth } : {}),
  });
  return `{"run":"${input.id}","start":${start.slice(0, -1)},"trigger":${row.trigger}}}`;
}

/**
 * Starting runs: record the run (status `queued`) and put it on the run stream (its id, and
 * the run as accepted when its trigger data is small: see `runEntrySchema`), in that order,
 * before answering. Starts arriving while an INSERT is in flight share the next one
 * (one statement and one commit for all their rows); as soon as it commits, each run's
 * append goes out, and the Broker sends the appends of one tick together (Redis
 * auto-pipelining, PostgreSQL's append batches). One INSERT at a time: the batch that
 * gathers behind a commit is what keeps commits (and their WAL flushes) few under load,
 * and an idle starter writes at once. The INSERT reads the flow's current revision (unless the start names one) in the
 * same statement; a flow that is not the account's (or deleted) inserts nothing.
 */
export function createRunStarter(deps: {
  database: DatabaseHandle;
  runQueue: RunQueue;
  metrics: MetricsRecorder;
  logger: Logger;
  /** The largest trigger data, in bytes of JSON (TRIGGER_MAX_BYTES). */
  triggerMaxBytes: number;
  /** Accounts' plans: runs started per minute. */
  limits: AccountLimits;
}) {
  const db = deps.database.db;

  async function insertRows(rows: Row[]): Promise<Inserted[]> {
    // A start with a delivery id inserts its run only if it claimed the id (see run_deliveries).
    const { rows: inserted } = await sql<{ id: string; revision: number }>`
      with v as (
        select v.id, f.account_id, f.id as flow_id, coalesce(v.revision, f.revision) as revision, v.trigger,
          v.replay_of, v.delivery_id, v.waiter, v.parent_run_id, coalesce(v.call_depth, 0) as call_depth
        from jsonb_to_recordset(${`[${rows.map((row) => row.json).join(",")}]`}::jsonb) as v(
          id uuid, account_id text, flow_id uuid, trigger jsonb, replay_of uuid, delivery_id text, waiter text,
          revision integer, parent_run_id uuid, call_depth integer)
        join flows f on f.id = v.flow_id and f.account_id = v.account_id and f.deleted_at is null),
      claimed as (
        insert into run_deliveries (flow_id, delivery_id, run_id)
        select flow_id, delivery_id, id from v where delivery_id is not null
        on conflict do nothing
        returning run_id)
      insert into runs (
        id, account_id, flow_id, revision, status, trigger, replay_of, delivery_id, waiter, parent_run_id, call_depth)
      select id, account_id, flow_id, revision, 'queued', trigger, replay_of, delivery_id, waiter, parent_run_id,
        call_depth
      from v where delivery_id is null or id in (select run_id from claimed)
      returning id, revision`.execute(db);
    const written = new Map(inserted.map((row) => [row.id, row.revision]));
    return Promise.all(
      rows.map((row): Inserted | Promise<Inserted> => {
        const revision = written.get(row.input.id);
        return revision === undefined ? notStarted(row.input) : { written: true, revision };
      }),
    );
  }

  /** Why a row was not inserted: its delivery started a run already, or the flow is not there. */
  async function notStarted(input: QueuedStart): Promise<Inserted> {
    if (input.deliveryId !== undefined) {
      const existing = await db
        .selectFrom("run_deliveries as d")
        .innerJoin("flows as f", "f.id", "d.flow_id")
        .select("d.run_id as id")
        .where("d.flow_id", "=", input.flowId)
        .where("f.account_id", "=", input.accountId)
        .where("d.delivery_id", "=", input.deliveryId)
        .executeTakeFirst();
      if (existing) return { runId: existing.id, duplicate: true };
    }
    return { failure: new DomainError("not_found", "flow not found") };
  }

  async function forgetRows(ids: string[]): Promise<boolean[]> {
    // The delivery ids they claimed go with them: the sender's retry must start a run.
    await sql`
      with gone as (delete from runs where id = any(${ids}::uuid[]) returning id, flow_id, delivery_id)
      delete from run_deliveries d using gone
      where d.flow_id = gone.flow_id and d.delivery_id = gone.delivery_id and d.run_id = gone.id`.execute(db);
    return ids.map(() => true);
  }

  const insert = groupCommit<Row, Inserted>(insertRows, {
    maxBatch: 500,
    maxInFlight: ONE_STATEMENT_AT_A_TIME,
    maxBytes: 4 * 1024 * 1024,
    sizeOf: (row) => row.json.length,
  });
  // A run that could not be queued was never accepted: its row goes (several at once while the Broker is down).
  const forget = groupCommit<string, boolean>(forgetRows, { maxBatch: 500, maxInFlight: ONE_STATEMENT_AT_A_TIME });

  return async function start(input: QueuedStart): Promise<StartedRun> {
    // Checked here: one malformed id would fail the statement of every start in its batch.
    if (!UUID.test(input.flowId)) throw new DomainError("not_found", "flow not found");
    if (input.replayOf !== undefined && !UUID.test(input.replayOf)) throw new DomainError("not_found", "run not found");
    const trigger = JSON.stringify(input.trigger ?? null);
    // Characters are at most 3 bytes of UTF-8: most trigger data needs no count.
    const triggerBytes = trigger.length * 3 <= deps.triggerMaxBytes ? trigger.length : Buffer.byteLength(trigger);
    if (triggerBytes > deps.triggerMaxBytes) {
      throw new DomainError(
        "payload_too_large",
        `the trigger data is ${triggerBytes.toLocaleString("en")} bytes of JSON; a run may start with at most ${deps.triggerMaxBytes.toLocaleString("en")} (TRIGGER_MAX_BYTES)`,
      );
    }
    const json = `${JSON.stringify({
      id: input.id,
      account_id: input.accountId,
      flow_id: input.flowId,
      replay_of: input.replayOf ?? null,
      delivery_id: input.deliveryId ?? null,
      waiter: input.waiter ?? null,
      revision: input.revision ?? null,
      parent_run_id: input.parent?.runId ?? null,
      call_depth: input.parent?.depth ?? null,
    }).slice(0, -1)},"trigger":${trigger}}`;
    // The last check before the shared INSERT: what jsonb refuses would fail every start of the batch.
    if (!isStorableJson(json)) {
      throw new DomainError("validation_error", "invalid input: the trigger data holds text that cannot be stored");
    }
    await deps.limits.spend(input.accountId, "runs_per_minute");
    const row = { json, trigger, input };
    const inserted = await insert(row).catch((error: unknown) => {
      // Written alone (see groupCommit), and still refused: this start's data is at fault, not the database.
      if (isRowFault(error)) {
        throw new DomainError("validation_error", "invalid input: the trigger data cannot be stored", { cause: error });
      }
      throw error;
    });
    if ("failure" in inserted) throw inserted.failure;
    if (!("written" in inserted)) return inserted;
    try {
      await deps.runQueue.append(input, entryOf(row, inserted.revision));
    } catch (error) {
      // The database failing too must not turn this into another error: the caller hears why it was not queued.
      await forget(input.id).catch((cause: unknown) => {
        deps.logger.error({ err: cause, runs: [input.id] }, "runs answered 503 could not be deleted; they stay queued");
      });
      throw error;
    }
    deps.metrics.count(input.accountId, "runs.started");
    deps.metrics.count(PLATFORM_SCOPE, "runs.started");
    return { runId: input.id, duplicate: false };
  };
}
