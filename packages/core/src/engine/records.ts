import type { RunStatus } from "@platform/db";

/** One try of a step. */
export interface AttemptRecord {
  /** ISO times. `finished_at` is absent while the attempt runs. */
  started_at: string;
  finished_at?: string;
  /** Why it failed; absent when it succeeded. */
  error?: string;
}

/**
 * `running`: an attempt (or, for a control step, its steps) is under way; `waiting`: a
 * `delay` step waits until `until`; `retrying`: a failed attempt waits for its backoff until
 * `until`; `skipped`: its `if` was false.
 */
export type StepStatus = "running" | "waiting" | "retrying" | "succeeded" | "failed" | "skipped";

/**
 * What the run keeps of one step (the checkpoint), under its key: the step's name, and
 * inside a for-each the item's index after it (`fetch[3]`, nested `fetch[3][0]`).
 */
export interface StepRecord {
  status: StepStatus;
  attempts: AttemptRecord[];
  output?: unknown;
  error?: string;
  started_at: string;
  finished_at?: string;
  /** When a waiting or retrying step may go on (ISO). */
  until?: string;
  /** A switch: the case that ran (its index), `"default"`, or null when none did. */
  case?: number | "default" | null;
  /** A for-each: how many items it iterates. */
  items?: number;
  /** The task whose failure this step ended with or handled (for a control step, one of its steps). */
  failed_step?: string;
  /** Its `catch` handler ran after `error`; the output is the handler's. */
  handled?: boolean;
  /** A `wait.event` or `flow.call` waiting: the event key, since when (ISO), and what a timeout does. */
  wait?: { key: string; since: string; on_timeout: "fail" | "continue" };
  /** A `flow.call`: the run it started. */
  child_run_id?: string;
  /** A `stop` ended the run here; `response` is its wait-mode answer, if it gave one. */
  stopped?: boolean;
  response?: unknown;
}

export type StepRecords = Record<string, StepRecord>;

/** Statuses after which nothing more happens to a run. */
export const FINAL_STATUSES: readonly RunStatus[] = [
  "succeeded",
  "failed",
  "cancelled",
  "filtered",
  "duplicate",
  "rejected",
];

export const isFinal = (status: RunStatus) => FINAL_STATUSES.includes(status);

/** What the `respond` step answers: the HTTP response of wait mode. */
export interface RespondOutput {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}
