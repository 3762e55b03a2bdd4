import type { BuiltInSubject } from "@platform/db";
import { isRowFault } from "../database-errors.ts";
import { isDomainError } from "../errors.ts";
import { ExpressionEvaluationError, UrlTemplateError } from "../templates/index.ts";
import type { AttemptNote } from "./attempt-notes.ts";
import { StepFailure } from "./step-failure.ts";

/** What a step function knows about the step it runs. */
export interface StepContext {
  accountId: string;
  runId: string;
  stepName: string;
  /** Aborted when the attempt's `options.timeout` is over, or the worker stops. */
  signal: AbortSignal;
  /** The attempt's time limit (`options.timeout`), in ms. */
  timeoutMs: number;
  /** The run's trigger data. */
  trigger: unknown;
  /** Outputs of the steps before this one, by name. */
  steps: Record<string, unknown>;
  /** Tells what the attempt did beside its output (console lines, a call), kept with the attempt (attempt-notes.ts). */
  note?: (note: AttemptNote) => void;
}

/** One built-in function: takes the step's resolved payload, answers its output (any JSON). */
export type StepFunction = (payload: unknown, context: StepContext) => Promise<unknown>;

/** Every subject but those the engine itself carries out (they park the run): `delay`, `wait.event`, `flow.call`. */
export type StepSubject = Exclude<BuiltInSubject, EngineSubject>;

export type EngineSubject = "delay" | "wait.event" | "flow.call";

export type StepFunctions = Record<StepSubject, StepFunction>;

/** Throws a step failure; not retryable unless said (the remaining attempts are skipped). */
export function failStep(message: string, retryable = false): never {
  throw new StepFailure(message, retryable);
}

/** Domain errors another attempt may not meet: the broker or database was down, or a bucket or stream did not exist yet. */
const RETRYABLE_CODES = new Set(["unavailable", "timeout", "internal_error", "bad_gateway", "not_found"]);

/**
 * Whether another attempt may succeed: failures marked `retryable: false` (a bad payload, a
 * refused address), domain errors of bad input (a value too large, a bad key) and the
 * database refusing a value (`isRowFault`: text it cannot store, say) do not; everything
 * else (timeouts, an upstream or the broker unavailable, a bucket not created yet) may.
 */
export function isRetryable(error: unknown): boolean {
  if (error instanceof StepFailure) return error.retryable;
  if (isRowFault(error)) return false;
  if (error instanceof UrlTemplateError || error instanceof ExpressionEvaluationError) return false;
  if (isDomainError(error)) return RETRYABLE_CODES.has(error.code);
  return true;
}

/** A subject whose implementation is not part of this build: every attempt fails, clearly. */
export function unavailableStep(subject: StepSubject): StepFunction {
  return async () => failStep(`the ${subject} step is not available on this platform build`);
}
