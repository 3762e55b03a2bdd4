import type { RunStatus, StepRecord } from "@platform/db";

/**
 * What a run keeps of each step (`run_steps.record`) is a stored shape, typed in @platform/db
 * with the others; the engine's modules take it from here.
 */
export type { StepRecord } from "@platform/db";

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
