import type { RunsTable } from "@platform/db";
import type { Selectable } from "kysely";
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

/** `stepOrder`: the step names of the run's flow revision, in order. */
export function runView(row: RunRow, stepOrder: readonly string[]): RunView {
  return {
    ...runSummary(row),
    trigger: row.trigger,
    steps: stepViews((row.steps ?? {}) as StepRecords, stepOrder),
    output: row.output ?? null,
    response: row.response ?? null,
  };
}
