import type { RunStatus, StepRecord } from "@platform/db";
import { FINAL_RUN_STATUSES } from "../enums.ts";

/**
 * What a run keeps of each step (`run_steps.record`) is a stored shape, typed in @platform/db
 * with the others; the engine's modules take it from here.
 */
export type { StepRecord } from "@platform/db";

export type StepRecords = Record<string, StepRecord>;

const FINAL: readonly RunStatus[] = FINAL_RUN_STATUSES;

/** Whether nothing more happens to a run of this status. */
export const isFinal = (status: RunStatus) => FINAL.includes(status);

/** What the `respond` step answers: the HTTP response of wait mode. */
export interface RespondOutput {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}
