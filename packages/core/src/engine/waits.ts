import { z } from "zod";
import { isDomainError, messageOf } from "../errors.ts";
import type { StartedRun } from "../runs/insert.ts";
import type { StartRunInput } from "../runs/start.ts";
import type { TemplateScope } from "../templates/index.ts";
import { eventKey } from "./event-keys.ts";
import { type RunEvents, WAIT_EVENT_DEFAULT_TIMEOUT_MS, WAIT_EVENT_MAX_TIMEOUT_MS } from "./events.ts";
import type { StepRecord } from "./records.ts";
import type { LoadedTask } from "./revisions.ts";
import type { RunSecrets } from "./run-secrets.ts";
import { isRetryable } from "./step-functions.ts";
import { failRecord, now, succeed, type TaskOutcome, type TaskRun } from "./task.ts";

/**
 * The steps that wait for something outside the run, holding no worker: `wait.event` (an
 * event of its key, see events.ts) and `flow.call` (the end of the run it starts). Each
 * records what it waits for on first sight; every later look checks whether it came, and
 * if not the run parks (until the wait's timeout, or for a call until the next check).
 */
export interface WaitDeps {
  events: RunEvents;
  /** Starts the run of a `flow.call` (a second start of the same step finds the first). */
  startChild(input: StartRunInput): Promise<StartedRun>;
  /** How a run ended, or null while it has not. */
  childOutcome(
    accountId: string,
    runId: string,
  ): Promise<{ status: "succeeded" | "failed"; output: unknown; error: string | null } | null>;
  /** How deep `flow.call`s may nest (FLOW_CALL_MAX_DEPTH). */
  maxCallDepth: number;
}

/** A run of this depth or less may call another flow. */
export interface CallingRun extends TaskRun {
  callDepth: number;
}

/** Still waiting: park until `until`; `ready` says whether what it waits for has come since. */
export type WaitOutcome = TaskOutcome | { kind: "wait"; until: Date; eventKey?: string; ready: () => Promise<boolean> };

/** A called run that has not ended is looked at again this often, should its end's wake be lost. */
export const CALL_CHECK_MS = 5 * 60_000;

const waitEventPayload = z.object({
  key: eventKey,
  timeout_ms: z.number().int().min(1).max(WAIT_EVENT_MAX_TIMEOUT_MS).default(WAIT_EVENT_DEFAULT_TIMEOUT_MS),
  on_timeout: z.enum(["fail", "continue"]).default("fail"),
});

const flowCallPayload = z.object({
  flow_id: z.uuid({ error: "must be a flow's id (a UUID)" }),
  input: z.unknown().default({}),
});

/** A payload read with its schema; a mismatch fails the step, naming the fields. */
function readPayload<S extends z.ZodType>(schema: S, payload: unknown): z.output<S> | string {
  const parsed = schema.safeParse(payload);
  if (parsed.success) return parsed.data;
  return `invalid payload: ${parsed.error.issues.map((issue) => `${issue.path.join(".") || "payload"}: ${issue.message}`).join("; ")}`;
}

/**
 * The step's payload resolved and read with `schema`; a failure to do either that another
 * try would meet too (a payload that does not fit, an expression's error, a missing secret)
 * as the text the step fails with (`failRecord` redacts it).
 */
async function readResolved<S extends z.ZodType>(
  schema: S,
  task: LoadedTask,
  scope: TemplateScope,
  secrets: RunSecrets,
): Promise<z.output<S> | string> {
  try {
    const values = task.secretKeys.length > 0 ? await secrets.read(task.secretKeys) : undefined;
    return readPayload(schema, await task.payload.resolve({ ...scope, secrets: values }));
  } catch (error) {
    // The database failing is not the step's fault: the delivery is tried again.
    if (isRetryable(error)) throw error;
    return messageOf(error);
  }
}

/** The step ends with what it waited for, if the run may record it (see record-budget.ts). */
function admitted(record: StepRecord, run: TaskRun, output: unknown, secrets: RunSecrets): TaskOutcome {
  const refused = run.budget.admit(output);
  return refused ? failRecord(record, refused, secrets) : succeed(record, output);
}

/** The attempt a wait began with ends with the step. */
function ended(record: StepRecord, outcome: TaskOutcome): TaskOutcome {
  delete record.wait;
  return outcome;
}

/** `wait.event`: the first event of its key sent since it began; at its timeout, fail or go on with null. */
export async function runWaitEvent(
  deps: WaitDeps,
  secrets: RunSecrets,
  task: LoadedTask,
  record: StepRecord,
  run: TaskRun,
  scope: TemplateScope,
): Promise<WaitOutcome> {
  if (record.wait === undefined) {
    record.attempts.push({ started_at: now() });
    const read = await readResolved(waitEventPayload, task, scope, secrets);
    if (typeof read === "string") return failRecord(record, read, secrets);
    const since = now();
    record.status = "waiting";
    record.until = new Date(Date.parse(since) + read.timeout_ms).toISOString();
    record.wait = { key: read.key, since, on_timeout: read.on_timeout };
  }
  const { key, since, on_timeout } = record.wait;
  const event = await deps.events.first(run.accountId, key, since);
  if (event) return ended(record, admitted(record, run, event.data ?? null, secrets));
  const until = new Date(record.until ?? since);
  if (Date.now() >= until.getTime()) {
    if (on_timeout === "continue") return ended(record, succeed(record, null));
    return ended(record, failRecord(record, `no event "${key}" arrived before the timeout (${record.until})`, secrets));
  }
  return {
    kind: "wait",
    until,
    eventKey: key,
    ready: async () => (await deps.events.first(run.accountId, key, since)) !== undefined,
  };
}

/** `flow.call`: starts a run of another flow of the account and ends with it; its output is the run's. */
export async function runFlowCall(
  deps: WaitDeps,
  secrets: RunSecrets,
  task: LoadedTask,
  record: StepRecord,
  run: CallingRun,
  scope: TemplateScope,
  stepKey: string,
): Promise<WaitOutcome> {
  if (record.child_run_id === undefined) {
    record.attempts.push({ started_at: now() });
    if (run.callDepth >= deps.maxCallDepth) {
      return failRecord(
        record,
        `flow.call: calls nest at most ${deps.maxCallDepth} deep (FLOW_CALL_MAX_DEPTH)`,
        secrets,
      );
    }
    const read = await readResolved(flowCallPayload, task, scope, secrets);
    if (typeof read === "string") return failRecord(record, read, secrets);
    try {
      const started = await deps.startChild({
        accountId: run.accountId,
        flowId: read.flow_id,
        trigger: read.input,
        // One run per calling step, however often the step is begun again after a crash.
        deliveryId: `flow.call/${run.id}/${stepKey}`,
        parent: { runId: run.id, depth: run.callDepth + 1 },
        via: "flow.call",
      });
      record.child_run_id = started.runId;
    } catch (error) {
      // What another try would meet again (no such flow, trigger data too large) fails the step; the rest is retried.
      if (isDomainError(error) && ["not_found", "validation_error", "payload_too_large"].includes(error.code)) {
        return failRecord(record, `flow.call: ${error.message}`, secrets);
      }
      throw error;
    }
    record.status = "waiting";
  }
  const child = record.child_run_id;
  const outcome = await deps.childOutcome(run.accountId, child);
  if (outcome?.status === "succeeded") return admitted(record, run, outcome.output ?? null, secrets);
  if (outcome?.status === "failed") {
    return failRecord(record, `the called run ${child} failed: ${outcome.error}`, secrets);
  }
  return {
    kind: "wait",
    until: new Date(Date.now() + CALL_CHECK_MS),
    ready: async () => (await deps.childOutcome(run.accountId, child)) !== null,
  };
}
