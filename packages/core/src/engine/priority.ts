import { messageOf } from "../errors.ts";
import type { CompiledPayload } from "../templates/index.ts";
import { StepFailure } from "./step-failure.ts";

/** The most seconds a run's priority moves it ahead of, or behind, the runs waiting with it. */
export const MAX_PRIORITY_S = 600;

/**
 * A run's priority (`priority: {run}`): the seconds its template gives on the run's trigger
 * data, by which the run moves ahead of (positive) or behind (negative) the other runs
 * waiting for a concurrency slot of its key (see concurrency.ts). A number beyond
 * ±MAX_PRIORITY_S counts as the bound; no value counts as 0. Any other value, or a template
 * that fails on the run's data, fails the same way every time: a failure not to be retried,
 * naming the setting.
 */
export async function priorityOf(run: CompiledPayload, trigger: unknown): Promise<number> {
  let value: unknown;
  try {
    value = await run.resolve({ trigger });
  } catch (error) {
    throw new StepFailure(`priority.run: ${messageOf(error)}`, false);
  }
  if (value === null || value === undefined) return 0;
  if (typeof value !== "number" || !Number.isFinite(value)) {
    throw new StepFailure(`priority.run: must give a number of seconds, not ${JSON.stringify(value)}`, false);
  }
  return Math.max(-MAX_PRIORITY_S, Math.min(MAX_PRIORITY_S, value));
}
