import type { RunStatus } from "@platform/db";
import { messageOf } from "../errors.ts";
import type { AccountLimits } from "../limits/account-limits.ts";
import { nextTurn, SLICE_MS } from "../loop-turns.ts";
import { sleep } from "../sleep.ts";
import type { TemplateScope } from "../templates/index.ts";
import { recordTrigger } from "../tracing/run-data.ts";
import { traceItem, traceStep } from "../tracing/run-spans.ts";
import { HandedOver } from "../tracing/spans.ts";
import { DEFAULT_LOG_LIMITS } from "./attempt-notes.ts";
import { PURE_SUBJECTS } from "./built-ins.ts";
import { createRecordBudget } from "./record-budget.ts";
import type { RespondOutput, StepRecord, StepRecords } from "./records.ts";
import type {
  LoadedFlow,
  LoadedForEach,
  LoadedParallel,
  LoadedStep,
  LoadedStop,
  LoadedSwitch,
  LoadedTask,
} from "./revisions.ts";
import { createRunSecrets } from "./run-secrets.ts";
import { createRunWriter, type RunWriter } from "./run-writer.ts";
import type { ClaimedRun, RunStore } from "./store.ts";
import { failRecord, keepOutput, now, runAttempts, runDelay, type TaskDeps } from "./task.ts";
import { IN_PROCESS_WAIT_MS } from "./timing.ts";
import { runFlowCall, runWaitEvent, type WaitDeps, type WaitOutcome } from "./waits.ts";

export { RunClaimedElsewhere, RunTakenOver } from "./run-writer.ts";

/** What the executor needs besides the run. */
export interface ExecutorDeps extends TaskDeps, WaitDeps {
  store: RunStore;
  /** The run's plan: what one run may record in all (`run_record_bytes`, see record-budget.ts). */
  limits: Pick<AccountLimits, "of">;
  /** Most items a for-each iterates (FOR_EACH_MAX_ITEMS). */
  forEachMaxItems: number;
  /**
   * Most steps (for-each items' steps each counted) one execution runs; past it (or at a
   * for-each whose items would take it past) the execution throws `ExecutionLimitReached`.
   * Unset: no limit but the flow's own.
   */
  stepLimit?: number;
  /**
   * Most milliseconds one execution runs, looked at as each step (and each for-each) begins;
   * past it the execution throws `ExecutionLimitReached`. Unset: no limit.
   */
  timeLimitMs?: number;
}

/** Steps a run runs at least between two turns of the event loop it gives back (see `executeRun`). */
const STEPS_PER_SLICE = 32;

/** An execution stopped at its `stepLimit` or `timeLimitMs`: nothing of it is to be kept, the workers run it. */
export class ExecutionLimitReached extends HandedOver {
  constructor(message: string) {
    super(message);
    this.name = "ExecutionLimitReached";
  }
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

/** The error text a run's span ends with: the run's own when it failed, else none. */
export const runEndError = (end: RunEnd) => (end.kind === "finished" && end.status === "failed" ? end.error : null);

/** How a step, or a list of steps, ended for now. */
type Outcome =
  | { kind: "done"; output: unknown }
  | { kind: "failed"; error: string; step: string }
  | { kind: "park"; until: Date }
  | { kind: "stopped" };

/**
 * Where a list of steps runs: the outputs its steps see by name, and inside a for-each the
 * item, its index and the suffix its steps' records are keyed with (`[3]`, nested `[3][0]`);
 * inside a handler the failure being handled.
 */
interface Frame {
  /**
   * This list's own view (the scope rule of flows/step-scope.ts): what the lists around it
   * had when it began, and its own steps' outputs as they end. No other list writes to it, so
   * a step never sees a step of a sibling branch or another case, nor one inside a construct
   * after it ended (the construct's output stands for it), however it names it.
   */
  outputs: Record<string, unknown>;
  suffix: string;
  item?: unknown;
  index?: number;
  error?: { message: string; step: string };
}

const done = (output: unknown): Outcome => ({ kind: "done", output });

/** The frame of a list inside a step of `frame`'s list: a view of its own, starting from what that list sees now. */
const inner = (frame: Frame, changes: Partial<Omit<Frame, "outputs">> = {}): Frame => ({
  ...frame,
  ...changes,
  outputs: { ...frame.outputs },
});

/** A condition's value as a decision: false, null, missing, 0, "" and [] do not hold. */
const holds = (value: unknown) => Boolean(value) && !(Array.isArray(value) && value.length === 0);

/**
 * Several outcomes (for-each items, parallel branches) as one: the first failure, else a
 * stop, else the earliest park, else done with `output`.
 */
function combine(outcomes: Outcome[], output: () => unknown): Outcome {
  const failed = outcomes.find((outcome) => outcome.kind === "failed");
  if (failed) return failed;
  if (outcomes.some((outcome) => outcome.kind === "stopped")) return { kind: "stopped" };
  const parks = outcomes.flatMap((outcome) => (outcome.kind === "park" ? [outcome.until.getTime()] : []));
  if (parks.length > 0) return { kind: "park", until: new Date(Math.min(...parks)) };
  return done(output());
}

/**
 * Runs a flow revision for a run from its last checkpoint. Steps recorded as ended are not
 * run again (their outputs feed the templates): a crash redoes at most the steps under way.
 * Control steps run their lists in place: a switch the case it chose (recorded, so a resumed
 * run takes the same one), a for-each its steps per item (records keyed per item, so finished
 * items stay done), a parallel step every branch at once. A step that fails after its
 * retries runs its `catch` handler if it has one, else fails the steps around it up to the
 * run, which then runs the flow's `on_failure` steps. A `delay`, a long retry backoff or a
 * wait parks the run (nothing holds a worker) until the earliest time anything can go on.
 * Writes go through the run's writer (see run-writer.ts): an attempt of a step with outside
 * effects is recorded before it starts, and its result before the next step starts.
 */
export async function executeRun(
  deps: ExecutorDeps,
  run: ClaimedRun,
  flow: LoadedFlow,
  signal: AbortSignal,
  onClaimed?: (claimedAt: number) => void,
): Promise<RunEnd> {
  const records: StepRecords = { ...run.steps };
  const { plan, limits } = await deps.limits.of(run.accountId);
  const quota = { limit: limits.run_record_bytes, plan, logs: (deps.logLimits ?? DEFAULT_LOG_LIMITS).runBytes };
  const budget = createRecordBudget(quota, run.recordedBytes, run.steps);
  const writer: RunWriter = createRunWriter(deps.store, run, onClaimed, () => budget.used);
  // Every secret a step reads goes through it, and every failure text it redacts (run-secrets.ts).
  const secrets = createRunSecrets(deps.secrets, run.accountId);
  const runInfo = {
    id: run.id,
    flowId: run.flowId,
    accountId: run.accountId,
    trigger: run.trigger,
    callDepth: run.callDepth,
    budget,
  };
  /** The waits the run parks on, by step record: their event keys go with the park, and are looked at again after it. */
  const waits = new Map<string, Extract<WaitOutcome, { kind: "wait" }>>();
  const runScope = { id: run.id, flow_id: run.flowId, started_at: run.startedAt };
  let response: unknown = null;
  let stopOutput: unknown = null;
  let stepsRun = 0;
  const executionStart = performance.now();
  /** Throws when `count` steps more would take the execution past `stepLimit`, or it ran past `timeLimitMs`. */
  const stepsAhead = (count: number) => {
    const { stepLimit, timeLimitMs } = deps;
    if (stepLimit !== undefined && stepsRun + count > stepLimit) {
      throw new ExecutionLimitReached(`the run would execute more than ${stepLimit} steps here`);
    }
    if (timeLimitMs !== undefined && performance.now() - executionStart > timeLimitMs) {
      throw new ExecutionLimitReached(`the run has executed for more than ${timeLimitMs} ms here`);
    }
  };
  // Steps that compute resolve without giving the event loop back: a long for-each would hold the
  // process (the API's, run in place) for all its items. A step that begins once the run ran
  // STEPS_PER_SLICE steps and a slice of time since its last turn waits for the loop's next
  // turn, in turn with expressions (loop-turns.ts). The time is the clock's, which under load
  // passes a slice while the run's steps interleave with others': the step count keeps the
  // common short run from waiting for turns it does not need.
  let sliceStart = performance.now();
  let sliceSteps = 0;
  const sliceUsed = () => ++sliceSteps >= STEPS_PER_SLICE && performance.now() - sliceStart >= SLICE_MS;
  const nextSlice = async () => {
    await nextTurn();
    sliceStart = performance.now();
    sliceSteps = 0;
  };

  // A step sees the outputs as they were when it began, never the frame's own object: an output
  // that holds its scope (`{{$}}`, `{{**}}`) would otherwise hold itself once it is one of them.
  const scopeOf = (frame: Frame): TemplateScope => ({
    trigger: run.trigger,
    steps: { ...frame.outputs },
    run: runScope,
    item: frame.item,
    index: frame.index,
    error: frame.error,
  });

  /** The scope with the secrets a step's own templates name. */
  const withSecrets = async (step: LoadedStep, scope: TemplateScope) =>
    step.secretKeys.length > 0 ? { ...scope, secrets: await secrets.read(step.secretKeys) } : scope;

  const touch = (key: string, record: StepRecord) => {
    budget.countErrors(key, record);
    writer.touch(key, record);
  };

  /**
   * Ends the record of control step `name` (kept under `key`) with the outcome of its steps,
   * or of its own expressions: a failure goes on as its record has it (redacted, see `failRecord`).
   */
  const settle = (name: string, key: string, record: StepRecord, outcome: Outcome): Outcome => {
    if (outcome.kind === "done") {
      const failure = keepOutput(outcome.output, deps.outputMaxBytes, budget);
      if (failure) {
        const { error } = failRecord(record, failure, secrets);
        touch(key, record);
        return { kind: "failed", error, step: name };
      }
      Object.assign(record, { status: "succeeded", output: outcome.output ?? null, finished_at: now() });
    } else if (outcome.kind === "failed") {
      const { error } = failRecord(record, outcome.error, secrets);
      record.failed_step = outcome.step;
      touch(key, record);
      return { ...outcome, error };
    } else if (outcome.kind === "stopped") {
      Object.assign(record, { status: "succeeded", output: null, finished_at: now() });
    }
    touch(key, record);
    return outcome;
  };

  async function runList(steps: LoadedStep[], frame: Frame, final: boolean): Promise<Outcome> {
    let output: unknown = null;
    for (const [index, step] of steps.entries()) {
      const outcome = await runStep(step, frame, final && index === steps.length - 1);
      if (outcome.kind !== "done") return outcome;
      frame.outputs[step.name] = outcome.output;
      output = outcome.output;
    }
    return done(output);
  }

  async function runStep(step: LoadedStep, frame: Frame, final: boolean): Promise<Outcome> {
    const key = step.name + frame.suffix;
    let record = records[key];
    if (record?.status === "succeeded" || record?.status === "skipped") {
      if (record.stopped) {
        stopOutput = record.output ?? null;
        if (record.response !== undefined) response = record.response;
        return { kind: "stopped" };
      }
      if (step.kind === "task" && step.subject === "respond" && record.status === "succeeded") {
        response = record.output ?? null;
      }
      return done(record.output ?? null);
    }
    stepsAhead(1);
    stepsRun++;
    if (sliceUsed()) await nextSlice();
    const scope = scopeOf(frame);
    if (!record) {
      if (step.condition) {
        let value: unknown;
        try {
          value = await step.condition.resolve(await withSecrets(step, scope));
        } catch (error) {
          record = { status: "running", attempts: [], started_at: now() };
          records[key] = record;
          const failure = { kind: "failed", error: `if: ${messageOf(error)}`, step: step.name } as const;
          return handle(step, key, record, frame, settle(step.name, key, record, failure));
        }
        if (!holds(value)) {
          const at = now();
          records[key] = { status: "skipped", attempts: [], output: null, started_at: at, finished_at: at };
          touch(key, records[key]);
          return done(null);
        }
      }
      record = { status: "running", attempts: [], started_at: now() };
      records[key] = record;
      touch(key, record);
    }
    const outcome: Outcome =
      record.status === "failed"
        ? { kind: "failed", error: record.error ?? "failed", step: record.failed_step ?? step.name }
        : await traceStep(
            { name: step.name, subject: step.kind === "task" ? step.subject : step.kind },
            key,
            secrets.redact,
            () => runKind(step, key, record, frame, scope, final),
          );
    return handle(step, key, record, frame, outcome);
  }

  /** A failed step with a `catch` handler: the handler runs, and its output becomes the step's (recorded again). */
  async function handle(step: LoadedStep, key: string, record: StepRecord, frame: Frame, outcome: Outcome) {
    if (outcome.kind !== "failed" || !step.handler) return outcome;
    const handled = await runList(
      step.handler,
      inner(frame, { error: { message: outcome.error, step: outcome.step } }),
      false,
    );
    if (handled.kind !== "done") return handled;
    const refused = budget.admit(handled.output);
    if (refused) {
      const { error } = failRecord(record, refused, secrets);
      touch(key, record);
      return { kind: "failed", error, step: step.name } as const;
    }
    Object.assign(record, { status: "succeeded", output: handled.output ?? null, handled: true, finished_at: now() });
    touch(key, record);
    return handled;
  }

  function runKind(
    step: LoadedStep,
    key: string,
    record: StepRecord,
    frame: Frame,
    scope: TemplateScope,
    final: boolean,
  ): Promise<Outcome> {
    switch (step.kind) {
      case "task":
        return runTask(step, key, record, scope, final);
      case "switch":
        return runSwitch(step, key, record, frame, scope);
      case "for_each":
        return runForEach(step, key, record, frame, scope);
      case "parallel":
        return runParallel(step, key, record, frame);
      case "stop":
        return runStop(step, key, record, scope);
    }
  }

  async function runTask(
    task: LoadedTask,
    key: string,
    record: StepRecord,
    scope: TemplateScope,
    final: boolean,
  ): Promise<Outcome> {
    // A wait recorded earlier (a delay, or a retry's backoff): over, short, or park again.
    // (`wait.event` and `flow.call` look at what they wait for first.)
    const timed = record.status === "retrying" || (record.status === "waiting" && task.subject === "delay");
    if (record.until !== undefined && timed) {
      const remaining = Date.parse(record.until) - Date.now();
      if (remaining > IN_PROCESS_WAIT_MS) return { kind: "park", until: new Date(record.until) };
      await sleep(remaining, signal);
      signal.throwIfAborted();
    }
    const checkpoint = () => {
      touch(key, record);
      return writer.checkpoint();
    };
    let outcome: WaitOutcome;
    if (task.subject === "delay") outcome = await runDelay(task, record, scope, signal, secrets);
    else if (task.subject === "wait.event") outcome = await runWaitEvent(deps, secrets, task, record, runInfo, scope);
    else if (task.subject === "flow.call") {
      outcome = await runFlowCall(deps, secrets, task, record, runInfo, scope, key);
      // The called run is started: it is on record before anything else happens.
      touch(key, record);
      if (outcome.kind === "wait") await writer.checkpoint();
    } else outcome = await runAttempts(deps, secrets, task, record, runInfo, scope, signal, checkpoint);
    touch(key, record);
    if (outcome.kind === "failed") return { kind: "failed", error: outcome.error, step: task.name };
    if (outcome.kind === "park") return outcome;
    if (outcome.kind === "wait") {
      waits.set(key, outcome);
      return { kind: "park", until: outcome.until };
    }
    if (task.subject === "respond") response = outcome.output;
    // A step with outside effects is not done twice: its result is written before anything goes on.
    if (!final && !PURE_SUBJECTS.has(task.subject)) await writer.checkpoint();
    return done(outcome.output);
  }

  async function runSwitch(
    step: LoadedSwitch,
    key: string,
    record: StepRecord,
    frame: Frame,
    scope: TemplateScope,
  ): Promise<Outcome> {
    if (record.case === undefined) {
      let chosen: number | "default" | null = step.fallback ? "default" : null;
      try {
        const guarded = await withSecrets(step, scope);
        for (const [index, branch] of step.cases.entries()) {
          if (holds(await branch.when.resolve(guarded))) {
            chosen = index;
            break;
          }
        }
      } catch (error) {
        return settle(step.name, key, record, {
          kind: "failed",
          error: `switch: ${messageOf(error)}`,
          step: step.name,
        });
      }
      record.case = chosen;
      touch(key, record);
    }
    const list =
      record.case === null
        ? []
        : record.case === "default"
          ? (step.fallback ?? [])
          : (step.cases[record.case]?.steps ?? []);
    return settle(step.name, key, record, await runList(list, inner(frame), false));
  }

  async function runForEach(
    step: LoadedForEach,
    key: string,
    record: StepRecord,
    frame: Frame,
    scope: TemplateScope,
  ): Promise<Outcome> {
    let items: unknown;
    try {
      items = (await step.items.resolve(await withSecrets(step, scope))) ?? [];
    } catch (error) {
      return settle(step.name, key, record, {
        kind: "failed",
        error: `for_each: ${messageOf(error)}`,
        step: step.name,
      });
    }
    const list = Array.isArray(items) ? items : null;
    const refusal =
      list === null
        ? `for_each: the value is ${typeof items === "object" ? "an object" : `a ${typeof items}`}, not an array`
        : list.length > deps.forEachMaxItems
          ? `for_each: ${list.length.toLocaleString("en")} items; a for_each takes at most ${deps.forEachMaxItems.toLocaleString("en")} (FOR_EACH_MAX_ITEMS)`
          : null;
    if (refusal !== null || list === null) {
      return settle(step.name, key, record, { kind: "failed", error: refusal ?? "", step: step.name });
    }
    // Every item runs a step at least: a limit the items are sure to pass stops the execution before the first.
    stepsAhead(list.length);
    if (record.items !== list.length) {
      record.items = list.length;
      touch(key, record);
    }
    const outputs: unknown[] = new Array(list.length).fill(null);
    const outcomes: Outcome[] = [];
    let next = 0;
    // Items start in order, `concurrency` at a time; none starts after one failed or stopped the run.
    const lane = async () => {
      while (next < list.length && !outcomes.some((o) => o.kind === "failed" || o.kind === "stopped")) {
        const index = next++;
        const itemFrame = inner(frame, { suffix: `${frame.suffix}[${index}]`, item: list[index], index });
        const outcome = await traceItem(step.name, index, () => runList(step.steps, itemFrame, false));
        if (outcome.kind === "done") outputs[index] = outcome.output;
        outcomes.push(outcome);
      }
    };
    await Promise.all(Array.from({ length: Math.min(step.concurrency, Math.max(list.length, 1)) }, lane));
    return settle(
      step.name,
      key,
      record,
      combine(outcomes, () => outputs),
    );
  }

  async function runParallel(step: LoadedParallel, key: string, record: StepRecord, frame: Frame): Promise<Outcome> {
    const outcomes = await Promise.all(step.branches.map(([, steps]) => runList(steps, inner(frame), false)));
    return settle(
      step.name,
      key,
      record,
      combine(outcomes, () =>
        Object.fromEntries(
          step.branches.map(([branch], index) => [branch, (outcomes[index] as { output?: unknown }).output ?? null]),
        ),
      ),
    );
  }

  async function runStop(step: LoadedStop, key: string, record: StepRecord, scope: TemplateScope): Promise<Outcome> {
    let answer: RespondOutput | undefined;
    let output: unknown;
    try {
      const guarded = await withSecrets(step, scope);
      output = (await step.output.resolve(guarded)) ?? null;
      if (step.response) {
        const context = {
          accountId: run.accountId,
          runId: run.id,
          stepName: step.name,
          timeoutMs: 1000,
          trigger: run.trigger,
          steps: scope.steps ?? {},
          signal,
        };
        answer = (await deps.functions.respond(await step.response.resolve(guarded), context)) as RespondOutput;
      }
      const failure = keepOutput({ output, answer }, deps.outputMaxBytes, budget);
      if (failure) throw failure;
    } catch (error) {
      return settle(step.name, key, record, {
        kind: "failed",
        error: `stop: ${messageOf(error)}`,
        step: step.name,
      });
    }
    Object.assign(record, { status: "succeeded", output, stopped: true, finished_at: now() });
    if (answer !== undefined) {
      record.response = answer;
      response = answer;
    }
    stopOutput = output;
    touch(key, record);
    return { kind: "stopped" };
  }

  /**
   * Parks the run until `until`, and on the keys of its waits; then looks at each wait again:
   * what came while the run still held itself woke nothing (see events.ts), so it wakes itself.
   */
  const park = async (until: Date): Promise<RunEnd> => {
    const waitingOn = [...waits.values()].flatMap((wait) => (wait.eventKey === undefined ? [] : [wait.eventKey]));
    await writer.write({ status: "running", wakeAt: until, waitingOn, release: true, finished: false });
    const ready = await Promise.all([...waits.values()].map((wait) => wait.ready()));
    if (ready.some(Boolean)) await deps.events.wake(run.id);
    return { kind: "parked", until };
  };

  try {
    return await runFlow();
  } finally {
    // The trigger, on a run span that shows the run's data: redacted of every secret read by now.
    recordTrigger(run.trigger, secrets.redact);
  }

  async function runFlow(): Promise<RunEnd> {
    const top: Frame = { outputs: {}, suffix: "" };
    const main = await runList(flow.steps, top, true);
    if (main.kind === "park") return park(main.until);
    if (main.kind === "failed") {
      const error = `step "${main.step}" failed: ${main.error}`;
      if (flow.onFailure.length > 0) {
        // A run may fail at any step: on_failure sees none of them (flows/step-scope.ts).
        const alerted = await runList(
          flow.onFailure,
          { outputs: {}, suffix: "", error: { message: main.error, step: main.step } },
          false,
        );
        if (alerted.kind === "park") return park(alerted.until);
      }
      await writer.write({ status: "failed", error, release: true, finished: true });
      return { kind: "finished", status: "failed", output: null, response, error };
    }
    const output = main.kind === "stopped" ? stopOutput : main.output;
    await writer.write({ status: "succeeded", error: null, release: true, finished: true });
    return { kind: "finished", status: "succeeded", output: output ?? null, response, error: null };
  }
}
