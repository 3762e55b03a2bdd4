import type { DatabaseHandle } from "@platform/db";
import { sql } from "kysely";
import { type Broker, PLATFORM_SCOPE } from "../broker/port.ts";
import { RUN_STREAM } from "../engine/consumer.ts";
import { DomainError } from "../errors.ts";
import { groupCommit, ONE_STATEMENT_AT_A_TIME } from "../group-commit.ts";
import type { MetricsRecorder } from "../monitoring/recorder.ts";

export interface StartRunInput {
  accountId: string;
  flowId: string;
  /** The trigger data (any JSON; a webhook's is an object). */
  trigger: unknown;
  /** The run this one replays. */
  replayOf?: string;
  /** The webhook delivery id: a second start with the same one for the flow starts nothing. */
  deliveryId?: string;
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

type Result = StartedRun | { failure: unknown };

/** A NUL character cannot be stored in PostgreSQL JSON; it would fail every start of the batch. */
const NUL_ESCAPE = /(?<!\\)(?:\\\\)*\\u0000/;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

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
  });
  return `{"run":"${input.id}","start":${start.slice(0, -1)},"trigger":${row.trigger}}}`;
}

/**
 * Starting runs: record the run (status `queued`) and put it on the run stream (its id, and
 * the run as accepted when its trigger data is small: see `runEntrySchema`), in that
 * order, before answering. Starts arriving while a statement is in flight share the next
 * one (one INSERT for the rows, their appends pipelined to the broker together). The
 * INSERT reads the flow's current revision in the same statement; a flow that is not the
 * account's (or deleted) inserts nothing.
 */
export function createRunStarter(deps: { database: DatabaseHandle; broker: Broker; metrics: MetricsRecorder }) {
  const db = deps.database.db;

  async function write(rows: Row[]): Promise<Result[]> {
    const { rows: inserted } = await sql<{ id: string; revision: number }>`
      insert into runs (id, account_id, flow_id, revision, status, trigger, replay_of, delivery_id, waiter)
      select v.id, f.account_id, f.id, f.revision, 'queued', v.trigger, v.replay_of, v.delivery_id, v.waiter
      from jsonb_to_recordset(${`[${rows.map((row) => row.json).join(",")}]`}::jsonb) as v(
        id uuid, account_id text, flow_id uuid, trigger jsonb, replay_of uuid, delivery_id text, waiter text)
      join flows f on f.id = v.flow_id and f.account_id = v.account_id and f.deleted_at is null
      on conflict (flow_id, delivery_id) where delivery_id is not null do nothing
      returning id, revision`.execute(db);
    const written = new Map(inserted.map((row) => [row.id, row.revision]));
    const appended = await Promise.allSettled(
      rows.map((row) => {
        const revision = written.get(row.input.id);
        return revision === undefined
          ? Promise.resolve(null)
          : deps.broker.append(PLATFORM_SCOPE, RUN_STREAM, entryOf(row, revision));
      }),
    );
    // A run that could not be queued was never accepted: its row goes, its caller hears why.
    const unqueued = rows.filter((row, i) => written.has(row.input.id) && appended[i]?.status === "rejected");
    if (unqueued.length > 0) {
      await db
        .deleteFrom("runs")
        .where(
          "id",
          "in",
          unqueued.map((row) => row.input.id),
        )
        .execute();
    }
    return Promise.all(
      rows.map(async (row, i): Promise<Result> => {
        const outcome = appended[i];
        if (outcome?.status === "rejected") return { failure: outcome.reason };
        if (written.has(row.input.id)) {
          deps.metrics.count(row.input.accountId, "runs.started");
          deps.metrics.count(PLATFORM_SCOPE, "runs.started");
          return { runId: row.input.id, duplicate: false };
        }
        return notStarted(row.input);
      }),
    );
  }

  /** Why a row was not inserted: its delivery started a run already, or the flow is not there. */
  async function notStarted(input: QueuedStart): Promise<Result> {
    if (input.deliveryId !== undefined) {
      const existing = await db
        .selectFrom("runs")
        .select("id")
        .where("flow_id", "=", input.flowId)
        .where("account_id", "=", input.accountId)
        .where("delivery_id", "=", input.deliveryId)
        .executeTakeFirst();
      if (existing) return { runId: existing.id, duplicate: true };
    }
    return { failure: new DomainError("not_found", "flow not found") };
  }

  const commit = groupCommit<Row, Result>(write, {
    maxBatch: 500,
    maxInFlight: ONE_STATEMENT_AT_A_TIME,
    maxBytes: 4 * 1024 * 1024,
    sizeOf: (row) => row.json.length,
  });

  return async function start(input: QueuedStart): Promise<StartedRun> {
    // Checked here: one malformed id would fail the statement of every start in its batch.
    if (!UUID.test(input.flowId)) throw new DomainError("not_found", "flow not found");
    if (input.replayOf !== undefined && !UUID.test(input.replayOf)) throw new DomainError("not_found", "run not found");
    const trigger = JSON.stringify(input.trigger ?? null);
    const json = `${JSON.stringify({
      id: input.id,
      account_id: input.accountId,
      flow_id: input.flowId,
      replay_of: input.replayOf ?? null,
      delivery_id: input.deliveryId ?? null,
      waiter: input.waiter ?? null,
    }).slice(0, -1)},"trigger":${trigger}}`;
    if (NUL_ESCAPE.test(json))
      throw new DomainError("validation_error", "invalid input: trigger holds a NUL character");
    const result = await commit({ json, trigger, input });
    if ("failure" in result) throw result.failure;
    return result;
  };
}
