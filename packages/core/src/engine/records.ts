import type { RunStatus } from "@platform/db";
import type { BuiltInSubject } from "../built-in-functions.ts";
import type { StepOptions } from "../flows/step-defaults.ts";

/** A step as a flow revision stores it (written by the flows API, see engine-design). */
export interface RevisionStep {
  name: string;
  subject: BuiltInSubject;
  payload: unknown;
  options: StepOptions;
}

/** One try of a step. */
export interface AttemptRecord {
  /** ISO times. `finished_at` is absent while the attempt runs. */
  started_at: string;
  finished_at?: string;
  /** Why it failed; absent when it succeeded. */
  error?: string;
}

/**
 * `running`: an attempt is under way; `waiting`: a `delay` step waits until `until`;
 * `retrying`: a failed attempt waits for its backoff until `until`.
 */
export type StepStatus = "running" | "waiting" | "retrying" | "succeeded" | "failed";

/** What the run row keeps of one step (the checkpoint). */
export interface StepRecord {
  status: StepStatus;
  attempts: AttemptRecord[];
  output?: unknown;
  error?: string;
  started_at: string;
  finished_at?: string;
  /** When a waiting or retrying step may go on (ISO). */
  until?: string;
}

export type StepRecords = Record<string, StepRecord>;

/** Statuses after which nothing more happens to a run. */
export const FINAL_STATUSES: readonly RunStatus[] = ["succeeded", "failed", "filtered", "duplicate", "rejected"];

export const isFinal = (status: RunStatus) => FINAL_STATUSES.includes(status);

/** What the `respond` step answers: the HTTP response of wait mode. */
export interface RespondOutput {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}
