/**
 * The `js` built-in's sandbox: user code (`export default (input) => ...`, async allowed) run in
 * QuickJS compiled to WebAssembly, in a fresh runtime per evaluation, with memory, stack and
 * time limits, and no host objects. Evaluations run on a pool of Worker threads (`workers`,
 * default 2), or on the caller's thread with `workers: 0` (then a long evaluation blocks the
 * event loop until its deadline, and only QuickJS's interrupt handler enforces it).
 */
import { StepFailure } from "../step-failure.ts";
import type { CapturedLogs } from "./console.ts";
import type { EvaluationLimits, Outcome } from "./evaluate.ts";
import { QuickJsHost } from "./host.ts";
import { WorkerPool } from "./pool.ts";

export const DEFAULT_JS_WORKERS = 2;
/** QuickJS's stack limit: deep recursion fails with a clear message well before the thread's own stack. */
export const DEFAULT_JS_STACK_BYTES = 256 * 1024;
export const DEFAULT_WATCHDOG_GRACE_MS = 1000;
/** What one evaluation's console keeps by default: lines, and characters of them in all. */
export const DEFAULT_LOG_LINES = 100;
export const DEFAULT_LOG_CHARS = 16 * 1024;

export type { CapturedLine, CapturedLogs, LogLevel } from "./console.ts";

export interface SandboxOptions {
  /** `JS_MEMORY_LIMIT_MB` in bytes: the heap of one evaluation. */
  memoryBytes: number;
  /** `JS_TIME_LIMIT_MS`: the longest one evaluation may run (a run's `limits.timeoutMs` may only lower it). */
  timeoutMs: number;
  /** Worker threads evaluating in parallel; 0 evaluates on the caller's thread. */
  workers?: number;
  stackBytes?: number;
  /** How long past its deadline a worker may stay busy before it is terminated and replaced. */
  watchdogGraceMs?: number;
  /** `STEP_LOG_MAX_LINES`: the console lines one evaluation keeps (more are only counted). */
  logLines?: number;
  /** `STEP_LOG_MAX_BYTES`: the characters of console lines one evaluation keeps, all lines together. */
  logChars?: number;
}

export interface RunLimits {
  /** Lowers the time limit for this evaluation. */
  timeoutMs?: number;
  /** Hears what the code wrote with `console` before the run answers or throws (raw: not redacted). */
  onLogs?: (logs: CapturedLogs) => void;
}

export interface Sandbox {
  /** Evaluates `code` on `input` (JSON-able) and returns the default export's result, as JSON. Throws StepFailure. */
  run(code: string, input: unknown, limits?: RunLimits): Promise<unknown>;
  close(): Promise<void>;
}

export function createSandbox(options: SandboxOptions): Sandbox {
  const workers = options.workers ?? DEFAULT_JS_WORKERS;
  const pool =
    workers > 0
      ? new WorkerPool(workers, options.memoryBytes, options.watchdogGraceMs ?? DEFAULT_WATCHDOG_GRACE_MS)
      : undefined;
  const inline = pool ? undefined : new QuickJsHost();

  function execute(code: string, input: string, limits: EvaluationLimits): Promise<Outcome> {
    if (pool) return pool.run({ code, input, limits });
    return (inline as QuickJsHost).evaluate(code, input, limits);
  }

  return {
    async run(code, input, limits) {
      if (typeof code !== "string" || code.trim() === "") {
        throw new StepFailure("js: payload.code must be the module's source text", false);
      }
      let inputJson: string;
      try {
        inputJson = JSON.stringify(input ?? null);
      } catch (error) {
        throw new StepFailure(`js: the input cannot be turned into JSON (${String(error)})`, false);
      }
      const outcome = await execute(code, inputJson, {
        memoryBytes: options.memoryBytes,
        stackBytes: options.stackBytes ?? DEFAULT_JS_STACK_BYTES,
        timeoutMs: Math.max(1, Math.min(options.timeoutMs, limits?.timeoutMs ?? options.timeoutMs)),
        logLines: options.logLines ?? DEFAULT_LOG_LINES,
        logChars: options.logChars ?? DEFAULT_LOG_CHARS,
      });
      if (outcome.logs) limits?.onLogs?.(outcome.logs);
      if (!outcome.ok) throw new StepFailure(outcome.message, outcome.retryable);
      return JSON.parse(outcome.output);
    },
    async close() {
      await pool?.close();
    },
  };
}
