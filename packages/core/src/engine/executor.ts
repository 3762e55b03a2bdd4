import type { RunStatus } from "@platform/db";
import { messageOf } from "../errors.ts";
import { isStorableJson } from "../input-guard.ts";
import { sleep } from "../sleep.ts";
import { resolvePayload } from "../templates/index.ts";
import { PURE_SUBJECTS, URL_FIELDS } from "./built-ins.ts";
import { delayUntil } from "./delay.ts";
import { recordableErrorText } from "./error-text.ts";
import type { StepRecord, StepRecords } from "./records.ts";
import type { LoadedStep } from "./revisions.ts";
import { StepFailure } from "./step-failure.ts";
import { isRetryable, type StepFunctions, type StepSubject } from "./step-functions.ts";
import type { ClaimedRun, RunStore, RunWrite, StepChange } from "./store.ts";
import { backoffDelay, IN_PROCESS_WAIT_MS, withTimeout } from "./timing.ts";

/** What the executor needs besides the run. */
export interface ExecutorDeps {
  store: RunStore;
  functions: StepFunctions;
  /** The values of the named secrets of an account; throws a failure naming a missing one. */
  secrets(accountId: string, keys: string[]): Promise<Record<string, string>>;
  /** The largest output a step may answer, in bytes of JSON (STEP_OUTPUT_MAX_BYTES). */
  outputMaxBytes: number;
}

/** How a run left the executor's hands. */
export type RunEnd =
  | {
      kind: "finished";
      status: Extract<RunStatus, "succeeded" | "failed">;
      output: unknown;
      response: unknown;
      error: string | null;
    }
  | { kind: "parked"; until: Date };

/** The worker lost the run to another delivery (it stopped answering for a while): stop here. */
export class RunTakenOver extends Error {
  override name = "RunTakenOver";
}

/**
 * The first write of a run taken from its queueing entry found it claimed by another
 * delivery, or ended: nothing this delivery did was recorded, and it has nothing to do.
 */
export class RunClaimedElsewhere extends RunTakenOver {
  override name = "RunClaimedElsewhere";
}

const INTERRUPTED = "interrupted: the worker stopped during this attempt";

const now = () => new Date().toISOString();

/** A failure as the run records it: redacted of the step's secrets, storable (see error-text.ts). */
const errorText = (error: unknown, secrets?: Record<string, string>) => recordableErrorText(messageOf(error), secrets);

/** Attempts that count against `options.attempts`: those a crash interrupted do not. */
const countedFailures = (record: StepRecord) =>
  record.attempts.filter((attempt) => attempt.error !== undefined && attempt.error !== INTERRUPTED).length;

/**
 * Runs the steps of a run in order from its last checkpoint (a run not claimed yet is
 * claimed by its first write, which comes before any step with outside effects): steps recorded as
 * succeeded are skipped (their outputs feed the templates), a waiting `delay` or a retry's
 * backoff either is over, is slept through when short, or parks the run again. Each step's
 * result is written before the next starts; an attempt of a step with outside effects is
 * recorded before it starts too, so a crash during it shows in the run. Every write carries
 * the record of the step at hand only, with its output when it has succeeded: an output is
 * written once. `onClaimed` hears when the first write claimed a run that stays held (its
 * lease starts then; `claimedAt` is from before that write was sent).
 */
export async function executeRun(
  deps: ExecutorDeps,
  run: ClaimedRun,
  steps: LoadedStep[],
  signal: AbortSignal,
  onClaimed?: (claimedAt: number) => void,
): Promise<RunEnd> {
  const records: StepRecords = { ...run.steps };
  const outputs: Record<string, unknown> = {};
  let response: unknown = null;
  /** The step being run: the one whose record every write carries. */
  let current: StepChange | undefined;
  // A run not claimed yet is claimed by its first write.
  let claim = run.claimed ? undefined : { startedAt: new Date() };

  const write = async (change: Omit<RunWrite, "id" | "holder" | "steps" | "claim">) => {
    const claiming = claim;
    const steps = current ? [current] : [];
    if (!(await deps.store.write({ id: run.id, holder: run.holder, steps, ...change, claim: claiming }))) {
      throw claiming
        ? new RunClaimedElsewhere(`run ${run.id} was claimed by another delivery`)
        : new RunTakenOver(`run ${run.id} was taken over by another delivery`);
    }
    claim = undefined;
    if (claiming && !change.release) onClaimed?.(claiming.startedAt.getTime());
  };
  const checkpoint = () => write({ status: "running", release: false, finished: false });
  const park = async (until: Date): Promise<RunEnd> => {
    await write({ status: "running", wakeAt: until, release: true, finished: false });
    return { kind: "parked", until };
  };
  const fail = async (step: LoadedStep, error: string): Promise<RunEnd> => {
    const message = `step "${step.name}" failed: ${error}`;
    await write({ status: "failed", error: message, release: true, finished: true });
    return { kind: "finished", status: "failed", output: null, response, error: message };
  };

  for (const [index, step] of steps.entries()) {
    const existing = records[step.name];
    if (existing?.status === "succeeded") {
      outputs[step.name] = existing.output;
      if (step.subject === "respond") response = existing.output ?? null;
      continue;
    }
    const record: StepRecord = existing ?? { status: "running", attempts: [], started_at: now() };
    records[step.name] = record;
    current = { name: step.name, record };
    const last = index === steps.length - 1;

    // A wait recorded earlier (a delay, or a retry's backoff): over, short, or park again.
    if (record.until !== undefined && (record.status === "waiting" || record.status === "retrying")) {
      const remaining = Date.parse(record.until) - Date.now();
      if (remaining > IN_PROCESS_WAIT_MS) return park(new Date(record.until));
      await sleep(remaining, signal);
      signal.throwIfAborted();
    }

    if (step.subject === "delay") {
      const outcome = await runDelay(step, record, run, outputs, signal);
      if (outcome.kind === "failed") return fail(step, outcome.error);
      if (outcome.kind === "park") return park(outcome.until);
    } else {
      const outcome = await runAttempts(deps, step, record, run, outputs, signal, checkpoint);
      if (outcome.kind === "failed") return fail(step, outcome.error);
      if (outcome.kind === "park") return park(outcome.until);
      if (step.subject === "respond") response = outcome.output;
    }
    outputs[step.name] = record.output;
    if (!last) await checkpoint();
  }

  const output = steps.length > 0 ? outputs[(steps.at(-1) as LoadedStep).name] : null;
  await write({ status: "succeeded", error: null, release: true, finished: true });
  return { kind: "finished", status: "succeeded", output: output ?? null, response, error: null };
}

/** Why a step's output (as JSON) cannot be kept in its run, or undefined when it can. */
function unstorableOutput(json: string, maxBytes: number): StepFailure | undefined {
  // Characters are at most 3 bytes of UTF-8 (a 4-byte one is two characters): most outputs need no count.
  const bytes = json.length * 3 <= maxBytes ? json.length : Buffer.byteLength(json);
  if (bytes > maxBytes) {
    return new StepFailure(
      `the output is ${bytes.toLocaleString("en")} bytes of JSON; a step may answer at most ${maxBytes.toLocaleString("en")} (STEP_OUTPUT_MAX_BYTES)`,
      false,
    );
  }
  if (!isStorableJson(json)) {
    return new StepFailure("the output holds text a run cannot store (a NUL character or a lone surrogate)", false);
  }
  return undefined;
}

type StepOutcome =
  | { kind: "succeeded"; output: unknown }
  | { kind: "failed"; error: string }
  | { kind: "park"; until: Date };

function succeed(record: StepRecord, output: unknown): StepOutcome {
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

function failRecord(record: StepRecord, error: string): StepOutcome {
  record.status = "failed";
  record.error = error;
  record.finished_at = now();
  delete record.until;
  return { kind: "failed", error };
}

/** A `delay` step: park until its time (recorded on first sight), or go on when it is near or past. */
async function runDelay(
  step: LoadedStep,
  record: StepRecord,
  run: ClaimedRun,
  outputs: Record<string, unknown>,
  signal: AbortSignal,
): Promise<StepOutcome> {
  if (record.until === undefined) {
    record.attempts.push({ started_at: now() });
    let until: Date;
    try {
      until = delayUntil(resolvePayload(step.payload, { trigger: run.trigger, steps: outputs }));
    } catch (error) {
      const attempt = record.attempts.at(-1);
      if (attempt) Object.assign(attempt, { finished_at: now(), error: errorText(error) });
      return failRecord(record, errorText(error));
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

/** Attempts of a step until one succeeds, the attempts run out, or a long backoff parks the run. */
async function runAttempts(
  deps: ExecutorDeps,
  step: LoadedStep,
  record: StepRecord,
  run: ClaimedRun,
  outputs: Record<string, unknown>,
  signal: AbortSignal,
  checkpoint: () => Promise<void>,
): Promise<StepOutcome> {
  const interrupted = record.attempts.at(-1);
  if (interrupted && interrupted.finished_at === undefined) {
    Object.assign(interrupted, { finished_at: now(), error: INTERRUPTED });
  }
  const fn = deps.functions[step.subject as StepSubject];
  const pure = PURE_SUBJECTS.has(step.subject);
  // Nothing to wait for in these: no timer, no signal of their own.
  const instant = step.subject === "transform" || step.subject === "respond";
  for (;;) {
    let payload: unknown;
    // Every value the step resolves is redacted from whatever failure text it leads to.
    let secrets: Record<string, string> | undefined;
    try {
      secrets = step.secretKeys.length > 0 ? await deps.secrets(run.accountId, step.secretKeys) : undefined;
      payload = resolvePayload(
        step.payload,
        { trigger: run.trigger, steps: outputs, secrets },
        { urlFields: URL_FIELDS[step.subject] },
      );
    } catch (error) {
      if (!isRetryable(error) || countedFailures(record) + 1 >= step.options.attempts) {
        const text = errorText(error, secrets);
        record.attempts.push({ started_at: now(), finished_at: now(), error: text });
        return failRecord(record, text);
      }
      throw error;
    }
    const attempt: StepRecord["attempts"][number] = { started_at: now() };
    record.attempts.push(attempt);
    record.status = "running";
    delete record.until;
    if (!pure) await checkpoint();
    let error: unknown;
    try {
      const context = {
        accountId: run.accountId,
        runId: run.id,
        stepName: step.name,
        timeoutMs: step.options.timeout,
        trigger: run.trigger,
        steps: outputs,
      };
      const output = instant
        ? await fn(payload, { ...context, signal })
        : await withTimeout(step.options.timeout, signal, (attemptSignal) =>
            fn(payload, { ...context, signal: attemptSignal }),
          );
      const stored = output === undefined ? null : output;
      error = unstorableOutput(JSON.stringify(stored), deps.outputMaxBytes);
      if (!error) return succeed(record, stored);
    } catch (thrown) {
      // The worker is stopping: leave the attempt open; the next delivery marks it interrupted.
      if (signal.aborted) throw thrown;
      error = thrown;
    }
    attempt.finished_at = now();
    attempt.error = errorText(error, secrets);
    const failed = countedFailures(record);
    if (!isRetryable(error) || failed >= step.options.attempts) return failRecord(record, attempt.error);
    const wait = backoffDelay(step.options.backoff_ms, failed);
    record.status = "retrying";
    record.until = new Date(Date.now() + wait).toISOString();
    if (wait > IN_PROCESS_WAIT_MS) return { kind: "park", until: new Date(record.until) };
    await sleep(wait, signal);
    signal.throwIfAborted();
  }
}
