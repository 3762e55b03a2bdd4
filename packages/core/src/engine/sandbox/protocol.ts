import type { EvaluationLimits, Outcome } from "./evaluate.ts";

/** One evaluation sent to a sandbox Worker; `input` is JSON text. */
export interface Task {
  kind: "task";
  id: number;
  code: string;
  input: string;
  limits: EvaluationLimits;
}

/** Sent once when a Worker starts, so it loads QuickJS before the first task arrives. */
export interface Warm {
  kind: "warm";
  memoryBytes: number;
}

export interface TaskResult {
  kind: "result";
  id: number;
  outcome: Outcome;
}

/** A Worker has loaded QuickJS (or failed to: the first task retries) and takes tasks. */
export interface Ready {
  kind: "ready";
}
