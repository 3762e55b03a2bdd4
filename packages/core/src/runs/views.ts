import type { Database, RunsTable, StoredStep } from "@platform/db";
import type { Kysely, Selectable } from "kysely";
import { queueReasonText } from "../engine/queue-reasons.ts";
import type { StepRecord, StepRecords } from "../engine/records.ts";
import { childLists, isForEach, isParallel, isStop, isSwitch } from "../flows/step-tree.ts";
import { traceIdOf } from "../tracing/spans.ts";

type RunRow = Selectable<RunsTable>;

/** A step of a run as the API shows it: its name, where it ran, then its record. */
export interface StepView extends StepRecord {
  name: string;
  /** The control step whose list holds it (a switch case, a for-each, a parallel branch, a handler's step); absent at the top. */
  parent?: string;
  /** Inside a for-each: the item's index, one per enclosing for-each, outermost first. */
  item?: number[];
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
  /** The run whose `flow.call` step started this one. */
  parent_run_id: string | null;
  /** Why a queued run waits: `waiting for concurrency slot`. */
  queue_reason: string | null;
  /** Why a flow control ended it without running it. */
  end_reason: string | null;
  /** The run that runs in its place (debounce, batch). */
  taken_by: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  /** From acceptance to the end, in milliseconds; null until the run ends. */
  duration_ms: number | null;
  /** Its OpenTelemetry trace, when the process that accepted it traced. */
  trace_id: string | null;
}

/** A step of the run's flow revision, as the run's view needs it. */
export interface RevisionStepRef {
  name: string;
  /** A task's subject, or the control step's kind (`switch`, `for_each`, `parallel`, `stop`). */
  subject: string;
  parent: string | null;
  /** Its place in document order, and each enclosing step's, outermost first. */
  rank: number[];
  /** Which of the enclosing steps (same order as `rank`, itself excluded) are for-eaches. */
  forEach: boolean[];
  /** In the flow's own list (not inside a control step, not in `on_failure`). */
  top: boolean;
}

/** What a run holds beside its row: its steps' records (with the outputs of those that ended) and its revision's steps. */
export interface RunDetail {
  records: StepRecords;
  /** Every step of the run's flow revision, in document order (empty if the revision is gone). */
  order: RevisionStepRef[];
}

/** The steps of a revision as `RunDetail.order` lists them. */
export function outlineSteps(steps: StoredStep[], onFailure: StoredStep[]): RevisionStepRef[] {
  const refs: RevisionStepRef[] = [];
  const visit = (list: StoredStep[], parent: RevisionStepRef | null, top: boolean) => {
    for (const step of list) {
      const kind = isSwitch(step)
        ? "switch"
        : isForEach(step)
          ? "for_each"
          : isParallel(step)
            ? "parallel"
            : isStop(step)
              ? "stop"
              : null;
      const ref: RevisionStepRef = {
        name: step.name,
        subject: kind ?? String((step as { subject?: unknown }).subject),
        parent: parent?.name ?? null,
        rank: [...(parent?.rank ?? []), refs.length],
        forEach: parent ? [...parent.forEach, parent.subject === "for_each"] : [],
        top,
      };
      refs.push(ref);
      for (const child of childLists(step)) visit(child.steps, ref, false);
    }
  };
  visit(steps, null, true);
  visit(onFailure, null, false);
  return refs;
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
    const { record } = row;
    // A skipped step's output is null, and not stored.
    records[row.name] =
      record.status === "succeeded" || record.status === "skipped" ? { ...record, output: row.output ?? null } : record;
  }
  return records;
}

/** A record's key split: `fetch[3][0]` → `fetch`, [3, 0]. */
function splitKey(key: string): { name: string; item: number[] } {
  const open = key.indexOf("[");
  if (open === -1) return { name: key, item: [] };
  return {
    name: key.slice(0, open),
    item: key
      .slice(open + 1, -1)
      .split("][")
      .map(Number),
  };
}

/**
 * A run's output and its wait-mode answer, read from its steps (they are stored once, in
 * the step that produced them): the output of a `stop` that ended it, else of its last
 * top-level step; the answer of a `stop` that gave one, else of the `respond` step that
 * succeeded last.
 */
export function runResult(
  status: RunsTable["status"],
  { records, order }: RunDetail,
): { output: unknown; response: unknown } {
  const stops = Object.values(records).filter((record) => record.stopped && record.status === "succeeded");
  const stop = stops[0];
  const last = order.filter((step) => step.top).at(-1);
  let output: unknown = null;
  if (status === "succeeded")
    output = stop ? (stop.output ?? null) : last ? (records[last.name]?.output ?? null) : null;
  const responds = new Set(order.filter((step) => step.subject === "respond").map((step) => step.name));
  let response: unknown = null;
  let latest = "";
  for (const [key, record] of Object.entries(records)) {
    if (record.status !== "succeeded" || !responds.has(splitKey(key).name)) continue;
    const at = record.finished_at ?? "";
    if (at >= latest) {
      latest = at;
      response = record.output ?? null;
    }
  }
  if (stop?.response !== undefined) response = stop.response;
  return { output, response };
}

/** How many items of each for-each a run view shows at once (`items_from` pages through the rest). */
export const ITEMS_PER_VIEW = 100;

/**
 * Steps in the order of the flow, each for-each item's steps together, item by item:
 * records are keyed by name (and item), JSONB keeps no key order, and steps finishing within
 * one millisecond tie on their times. Only the items `[itemsFrom, itemsFrom + ITEMS_PER_VIEW)`
 * of each for-each are shown.
 */
export function stepViews(records: StepRecords, order: readonly RevisionStepRef[], itemsFrom = 0): StepView[] {
  const refs = new Map(order.map((ref) => [ref.name, ref]));
  const views: { view: StepView; rank: number[] }[] = [];
  for (const [key, record] of Object.entries(records)) {
    const { name, item } = splitKey(key);
    const first = item[0];
    if (first !== undefined && (first < itemsFrom || first >= itemsFrom + ITEMS_PER_VIEW)) continue;
    const ref = refs.get(name);
    const rank: number[] = [];
    if (ref) {
      let items = 0;
      for (const [level, position] of ref.rank.entries()) {
        rank.push(position);
        if (ref.forEach[level]) rank.push(item[items++] ?? 0);
      }
    } else rank.push(order.length);
    const view: StepView = { name, ...record };
    if (ref?.parent) view.parent = ref.parent;
    if (item.length > 0) view.item = item;
    views.push({ view, rank });
  }
  const compare = (a: number[], b: number[]) => {
    for (let index = 0; index < Math.min(a.length, b.length); index++) {
      const difference = (a[index] as number) - (b[index] as number);
      if (difference !== 0) return difference;
    }
    return a.length - b.length;
  };
  return views
    .sort((a, b) => compare(a.rank, b.rank) || a.view.started_at.localeCompare(b.view.started_at))
    .map(({ view }) => view);
}

/** A run in a listing: everything but its trigger data and steps. */
export type RunSummary = Omit<RunView, "trigger" | "steps" | "output" | "response" | "trace_id">;

const iso = (date: Date | null) => (date ? date.toISOString() : null);

/** The columns a summary reads (the function `runs_page` answers these). */
export const SUMMARY_COLUMNS = [
  "id",
  "flow_id",
  "revision",
  "status",
  "error",
  "replay_of",
  "parent_run_id",
  "queue_reason",
  "end_reason",
  "taken_by",
  "created_at",
  "started_at",
  "finished_at",
] as const;

export type SummaryRow = Pick<RunRow, (typeof SUMMARY_COLUMNS)[number]>;

export function runSummary(row: SummaryRow): RunSummary {
  return {
    id: row.id,
    flow_id: row.flow_id,
    revision: row.revision,
    status: row.status,
    error: row.error,
    replay_of: row.replay_of,
    parent_run_id: row.parent_run_id,
    queue_reason: queueReasonText(row.queue_reason),
    end_reason: row.end_reason,
    taken_by: row.taken_by,
    created_at: row.created_at.toISOString(),
    started_at: iso(row.started_at),
    finished_at: iso(row.finished_at),
    duration_ms: row.finished_at ? row.finished_at.getTime() - row.created_at.getTime() : null,
  };
}

export function runView(row: RunRow, detail: RunDetail, itemsFrom = 0): RunView {
  return {
    ...runSummary(row),
    trigger: row.trigger,
    steps: stepViews(detail.records, detail.order, itemsFrom),
    ...runResult(row.status, detail),
    trace_id: traceIdOf(row.traceparent),
  };
}
