import { messageOf } from "../errors.ts";
import { isStorableJson } from "../input-guard.ts";
import { sleep } from "../sleep.ts";
import type { TemplateScope } from "../templates/index.ts";
import { traceAttempt } from "../tracing/run-spans.ts";
import { attemptNotes, DEFAULT_LOG_LIMITS, type LogLimits } from "./attempt-notes.ts";
import { PURE_SUBJECTS, URL_FIELDS } from "./built-ins.ts";
import { delayUntil } from "./delay.ts";
import type { RecordBudget } from "./record-budget.ts";
import type { StepRecord } from "./records.ts";
import type { LoadedTask } from "./revisions.ts";
import type { RunSecrets, SecretsReader } from "./run-secrets.ts";
import { StepFailure } from "./step-failure.ts";
import { isRetryable, type StepFunctions, type StepSubject } from "./step-functions.ts";
import { backoffDelay, IN_PROCESS_WAIT_MS, withTimeout } from "./timing.ts";

/** What running a task needs besides the task and its record. */
export interface TaskDeps {
  functions: StepFunctions;
  /** Reads secrets for the runs (each run's through its RunSecrets, see run-secrets.ts). */
  secrets: SecretsReader;
  /** The largest output a step may answer, in bytes of JSON (STEP_OUTPUT_MAX_BYTES). */
  outputMaxBytes: number;
  /** How much of a step's console lines an attempt and a run keep (default DEFAULT_LOG_LIMITS). */
  logLimits?: LogLimits;
}

/** The run a task belongs to, as its function hears of it. */
export interface TaskRun {
  id: string;
  accountId: string;
  trigger: unknown;
  /** What the run has recorded, within its plan's `run_record_bytes`: each output it admits is counted. */
  budget: RecordBudget;
}

export type TaskOutcome =
  | { kind: "succeeded"; output: unknown }
  | { kind: "failed"; error: string }
  | { kind: "park"; until: Date };

export const INTERRUPTED = "interrupted: the worker stopped during this attempt";

let nowMs = Number.NaN;
let nowText = "";

/**
 * The time as a record writes it (ISO 8601, to the millisecond). A run's steps stamp their
 * records three or four times each, many in one millisecond: each millisecond's text is made
 * once (a five-step flow-language run spent 4% of its worker's CPU writing dates).
 */
export function now(): string {
  const ms = Date.now();
  if (ms !== nowMs) {
    nowMs = ms;
    nowText = new Date(ms).toISOString();
  }
  return nowText;
}

/** Attempts that count against `options.attempts`: those a crash interrupted do not. */
const countedFailures = (record: StepRecord) =>
  record.attempts.filter((attempt) => attempt.error !== undefined && attempt.error !== INTERRUPTED).length;

/**
 * Counts a step's output in what its run records (see record-budget.ts), or answers why it
 * cannot be kept in its run: a value JSON cannot write (one that holds itself), one past
 * STEP_OUTPUT_MAX_BYTES, text PostgreSQL refuses, or one past what the run may still record.
 * Each fails the step at once: another attempt would make the same value. The output is
 * written as JSON once, for all of these.
 */
export function keepOutput(output: unknown, maxBytes: number, budget: RecordBudget): StepFailure | undefined {
  let json: string;
  try {
    json = JSON.stringify(output ?? null);
  } catch (error) {
    return new StepFailure(`the output is not storable: ${messageOf(error)}`, false);
  }
  const bytes = Buffer.byteLength(json);
  if (bytes > maxBytes) {
    return new StepFailure(
      `the output is ${bytes.toLocaleString("en")} bytes of JSON; a step may answer at most ${maxBytes.toLocaleString("en")} (STEP_OUTPUT_MAX_BYTES)`,
      false,
    );
  }
  if (!isStorableJson(json)) {
    return new StepFailure("the output holds text a run cannot store (a NUL character or a lone surrogate)", false);
  }
  return budget.admit(output, bytes);
}

export function succeed(record: StepRecord, output: unknown): { kind: "succeeded"; output: unknown } {
  const at = now();
  const attempt = record.attempts.at(-1);
  if (attempt) attempt.finished_at = at;
  record.status = "succeeded";
  record.output = output;
  record.finished_at = at;
  delete record.until;
  delete record.error;
  return { kind: "succeeded", output };
}

/**
 * Ends a step's record failed: the one place a step's error is written, as the run's
 * `failureText` makes it (redacted of every secret the run read), whatever failed and
 * however its text was put together. A failed outcome carries this text on.
 */
export function failRecord(
  record: StepRecord,
  failure: unknown,
  secrets: RunSecrets,
): { kind: "failed"; error: string } {
  const error = secrets.failureText(failure);
  record.status = "failed";
  record.error = error;
  record.finished_at = now();
  delete record.until;
  return { kind: "failed", error };
}

/** A `delay` step: park until its time (recorded on first sight), or go on when it is near or past. */
export async function runDelay(
  task: LoadedTask,
  record: StepRecord,
  scope: TemplateScope,
  signal: AbortSignal,
  secrets: RunSecrets,
): Promise<TaskOutcome> {
  if (record.until === undefined) {
    record.attempts.push({ started_at: now() });
    let until: Date;
    try {
      until = delayUntil(await task.payload.resolve(scope));
    } catch (error) {
      const attempt = record.attempts.at(-1);
      if (attempt) Object.assign(attempt, { finished_at: now(), error: secrets.failureText(error) });
      return failRecord(record, error, secrets);
    }
    record.status = "waiting";
    record.until = until.toISOString();
    const remaining = until.getTime() - Date.now();
    if (remaining > IN_PROCESS_WAIT_MS) return { kind: "park", until };
    await sleep(remaining, signal);
    signal.throwIfAborted();
  }
  return succeed(record, { until: record.until });
}

/**
 * Attempts of a task until one succeeds, the attempts run out, or a long backoff parks the
 * run. An attempt of a task with outside effects is checkpointed before it starts, so a
 * crash during it shows in the run.
 */
export async function runAttempts(
  deps: TaskDeps,
  secrets: RunSecrets,
  task: LoadedTask,
  record: StepRecord,
  run: TaskRun,
  scope: TemplateScope,
  signal: AbortSignal,
  checkpoint: () => Promise<void>,
): Promise<TaskOutcome> {
  const interrupted = record.attempts.at(-1);
  if (interrupted && interrupted.finished_at === undefined) {
    Object.assign(interrupted, { finished_at: now(), error: INTERRUPTED });
  }
  const fn = deps.functions[task.subject as StepSubject];
  const pure = PURE_SUBJECTS.has(task.subject);
  // Nothing to wait for in these: no timer, no signal of their own.
  const instant = task.subject === "transform" || task.subject === "respond";
  for (;;) {
    let payload: unknown;
    try {
      const values = task.secretKeys.length > 0 ? await secrets.read(task.secretKeys) : scope.secrets;
      payload = await task.payload.resolve({ ...scope, secrets: values }, { urlFields: URL_FIELDS[task.subject] });
    } catch (error) {
      if (!isRetryable(error) || countedFailures(record) + 1 >= task.options.attempts) {
        const text = secrets.failureText(error);
        record.attempts.push({ started_at: now(), finished_at: now(), error: text });
        return failRecord(record, text, secrets);
      }
      throw error;
    }
    const attempt: StepRecord["attempts"][number] = { started_at: now() };
    record.attempts.push(attempt);
    record.status = "running";
    delete record.until;
    if (!pure) await checkpoint();
    let error: unknown;
    // What the attempt tells beside its output is kept with it, after its output is counted.
    const notes = attemptNotes(secrets, run.budget, deps.logLimits ?? DEFAULT_LOG_LIMITS);
    try {
      const context = {
        accountId: run.accountId,
        runId: run.id,
        stepName: task.name,
        timeoutMs: task.options.timeout,
        trigger: run.trigger,
        steps: scope.steps ?? {},
        note: notes.note,
      };
      const output = await traceAttempt(task, record.attempts.length, secrets.failureText, () =>
        instant
          ? fn(payload, { ...context, signal })
          : withTimeout(task.options.timeout, signal, (attemptSignal) =>
              fn(payload, { ...context, signal: attemptSignal }),
            ),
      );
      const stored = output === undefined ? null : output;
      error = keepOutput(stored, deps.outputMaxBytes, run.budget);
      if (!error) return succeed(record, stored);
    } catch (thrown) {
      // The worker is stopping: leave the attempt open; the next delivery marks it interrupted.
      if (signal.aborted) throw thrown;
      error = thrown;
    } finally {
      notes.keep(attempt);
    }
    attempt.finished_at = now();
    attempt.error = secrets.failureText(error);
    const failed = countedFailures(record);
    if (!isRetryable(error) || failed >= task.options.attempts) return failRecord(record, attempt.error, secrets);
    const wait = backoffDelay(task.options.backoff_ms, failed);
    record.status = "retrying";
    record.until = new Date(Date.now() + wait).toISOString();
    if (wait > IN_PROCESS_WAIT_MS) return { kind: "park", until: new Date(record.until) };
    await sleep(wait, signal);
    signal.throwIfAborted();
  }
}
