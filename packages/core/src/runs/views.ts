import type { Database, RunsTable } from "@platform/db";
import type { Kysely, Selectable } from "kysely";
import type { StepRecord, StepRecords } from "../engine/records.ts";

type RunRow = Selectable<RunsTable>;

/** A step of a run as the API shows it: its name, then its record. */
export interface StepView extends StepRecord {
  name: string;
}

/** A run as `GET /runs/{id}` answers it. */
export interface RunView {
  id: string;
  flow_id: string;
  revision: number;
  status: RunsTable["status"];
  trigger: unknown;
  steps: StepView[];
  output: unknown;
  response: unknown;
  error: string | null;
  replay_of: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  /** From acceptance to the end, in milliseconds; null until the run ends. */
  duration_ms: number | null;
}

/** A step of the run's flow revision, as the run's view needs it. */
export interface RevisionStepRef {
  name: string;
  subject: string;
}

/** What a run holds beside its row: its steps' records (with the outputs of those that ended) and its revision's steps. */
export interface RunDetail {
  records: StepRecords;
  /** The steps of the run's flow revision, in order (empty if the revision is gone). */
  order: RevisionStepRef[];
}

/** The step records of a run, outputs of the steps that succeeded included. */
export async function readStepRecords(db: Kysely<Database>, runId: string): Promise<StepRecords> {
  const rows = await db
    .selectFrom("run_steps")
    .select(["name", "record", "output"])
    .where("run_id", "=", runId)
    .execute();
  const records: StepRecords = {};
  for (const row of rows) {
    const record = row.record as unknown as StepRecord;
    records[row.name] = record.status === "succeeded" ? { ...record, output: row.output ?? null } : record;
  }
  return records;
}

/**
 * A run's output and its `respond` answer, read from its steps (they are stored once, in the
 * step that produced them): the output of the last step of a run that succeeded, and the
 * output of the last `respond` step that succeeded.
 */
export function runResult(
  status: RunsTable["status"],
  { records, order }: RunDetail,
): { output: unknown; response: unknown } {
  const last = order.at(-1);
  const output = status === "succeeded" && last ? (records[last.name]?.output ?? null) : null;
  let response: unknown = null;
  for (const step of order) {
    const record = records[step.name];
    if (step.subject === "respond" && record?.status === "succeeded") response = record.output ?? null;
  }
  return { output, response };
}

/** A run in a listing: everything but its trigger data and steps. */
export type RunSummary = Omit<RunView, "trigger" | "steps" | "output" | "response">;

const iso = (date: Date | null) => (date ? date.toISOString() : null);

/**
 * Steps in the order the run's flow revision lists them: the record is keyed by name,
 * JSONB keeps no key order, and steps finishing within one millisecond tie on their times.
 */
export function stepViews(records: StepRecords, order: readonly string[]): StepView[] {
  const position = (name: string) => {
    const index = order.indexOf(name);
    return index === -1 ? order.length : index;
  };
  return Object.entries(records)
    .map(([name, record]) => ({ name, ...record }))
    .sort((a, b) => position(a.name) - position(b.name) || a.started_at.localeCompare(b.started_at));
}

/** The columns a summary reads. */
type SummaryRow = Pick<
  RunRow,
  "id" | "flow_id" | "revision" | "status" | "error" | "replay_of" | "created_at" | "started_at" | "finished_at"
>;

export function runSummary(row: SummaryRow): RunSummary {
  return {
    id: row.id,
    flow_id: row.flow_id,
    revision: row.revision,
    status: row.status,
    error: row.error,
    replay_of: row.replay_of,
    created_at: row.created_at.toISOString(),
    started_at: iso(row.started_at),
    finished_at: iso(row.finished_at),
    duration_ms: row.finished_at ? row.finished_at.getTime() - row.created_at.getTime() : null,
  };
}

export function runView(row: RunRow, detail: RunDetail): RunView {
  return {
    ...runSummary(row),
    trigger: row.trigger,
    steps: stepViews(
      detail.records,
      detail.order.map((step) => step.name),
    ),
    ...runResult(row.status, detail),
  };
}
