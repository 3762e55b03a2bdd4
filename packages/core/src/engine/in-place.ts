import type { Database, DatabaseHandle } from "@platform/db";
import type { Kysely } from "kysely";
import { tracesRunData } from "../accounts/settings.ts";
import { PLATFORM_SCOPE } from "../broker/port.ts";
import type { CoreConfig } from "../config.ts";
import { messageOf } from "../errors.ts";
import type { AccountLimits } from "../limits/account-limits.ts";
import type { Logger } from "../logger.ts";
import type { MetricsRecorder } from "../monitoring/recorder.ts";
import type { InPlaceRunner } from "../runs/service.ts";
import type { Sealer } from "../sealing.ts";
import type { DefinitionCache } from "../storage/definition-cache.ts";
import { traceRun } from "../tracing/run-spans.ts";
import { COMPUTING_SUBJECTS, computingStepFunctions } from "./built-ins.ts";
import type { RunEvents } from "./events.ts";
import { type ExecutorDeps, executeRun, type RunEnd, RunTakenOver } from "./executor.ts";
import { createRevisionCache, hasStartControl, type LoadedFlow, type LoadedStep } from "./revisions.ts";
import type { RunQueue } from "./run-queue.ts";
import { createSecretsReader } from "./secrets-reader.ts";
import { createRunStore, type FreshRun } from "./store.ts";

/** Flows this process remembers the runs-in-place revision of (the most recently started). */
const MAX_FLOWS = 10_000;

/** Whether every step of a list only computes (see `runsInPlace`). */
function computesOnly(steps: LoadedStep[]): boolean {
  return steps.every((step) => {
    if (step.handler && !computesOnly(step.handler)) return false;
    if (step.kind === "task") return COMPUTING_SUBJECTS.has(step.subject);
    if (step.kind === "stop") return true;
    if (step.kind === "switch") {
      return step.cases.every((branch) => computesOnly(branch.steps)) && computesOnly(step.fallback ?? []);
    }
    return false;
  });
}

/**
 * Whether a wait-mode start of the flow runs in the process that accepted it: every step
 * (its `catch` handler and the flow's `on_failure` steps too) is a `transform`, a `respond`,
 * a `stop` or a `switch` of such steps, with `if` guards of any kind; no `for_each` or
 * `parallel` (their items and branches are the worker's to spread); and no flow control
 * judges its starts (a concurrency limit, a throttle, a rate limit, a singleton, a debounce,
 * a batch or a start timeout: each needs the queue).
 */
export function runsInPlace(flow: LoadedFlow): boolean {
  return (
    flow.concurrency === undefined && !hasStartControl(flow) && computesOnly(flow.steps) && computesOnly(flow.onFailure)
  );
}

export interface InPlaceDeps {
  database: DatabaseHandle;
  db: Kysely<Database>;
  sealer: Sealer;
  limits: AccountLimits;
  events: RunEvents;
  metrics: MetricsRecorder;
  logger: Logger;
  runQueue: RunQueue;
  storageDefinitions: DefinitionCache;
  config: Pick<CoreConfig["runs"], "leaseMs" | "stepOutputMaxBytes" | "forEachMaxItems" | "logLimits">;
}

const notInPlace = () => Promise.reject(new Error("a run executed in place starts no other run"));

/**
 * Wait-mode starts of flows that only compute, executed where they were accepted (issue 34):
 * the run is recorded as every run is (runs/insert.ts), but instead of being appended to the
 * run queue it is left to the waker IN_PLACE_RECOVER_AFTER ahead and executed at once by
 * the accepting process, whose end write claims and ends it in one statement: no stream
 * round trip, no worker's claim, no notification of the end. Should that process die
 * first, the waker queues the run and a worker executes it once, as any run it wakes; a run
 * that parks (a retry's backoff too long to wait for in place) is the waker's and the
 * workers' from then on, like every parked run.
 *
 * Which flows run in place is learned per process: each start's INSERT answers the revision
 * it runs (`learn`), and a later start asks the INSERT to be left to the waker only when the
 * flow's current revision is still the one known to run in place (`revisionOf`), so a flow
 * saved since goes through the queue, and so does the first start of a flow in a process.
 */
export function createInPlaceRunner(deps: InPlaceDeps): InPlaceRunner {
  const revisions = createRevisionCache(deps.db);
  const store = createRunStore(deps.database, deps.config.leaseMs, deps.runQueue);
  const executor: ExecutorDeps = {
    store,
    functions: computingStepFunctions(),
    secrets: createSecretsReader(deps),
    outputMaxBytes: deps.config.stepOutputMaxBytes,
    forEachMaxItems: deps.config.forEachMaxItems,
    logLimits: deps.config.logLimits,
    events: deps.events,
    startChild: notInPlace,
    childOutcome: notInPlace,
    maxCallDepth: 0,
    limits: deps.limits,
  };
  /** Flow id → the revision known to run in place. */
  const known = new Map<string, number>();
  /** Flow id → the newest revision learned, so that a late answer about an older one changes nothing. */
  const newest = new Map<string, number>();

  const remember = (flowId: string, revision: number | undefined) => {
    if (revision === undefined) known.delete(flowId);
    else {
      if (known.size >= MAX_FLOWS && !known.has(flowId)) known.delete(known.keys().next().value as string);
      known.set(flowId, revision);
    }
  };

  return {
    revisionOf: (flowId) => known.get(flowId),

    learn(flowId, revision) {
      if (known.get(flowId) === revision || (newest.get(flowId) ?? 0) > revision) return;
      if (newest.size >= MAX_FLOWS && !newest.has(flowId)) newest.delete(newest.keys().next().value as string);
      newest.set(flowId, revision);
      revisions.flow(flowId, revision).then(
        (flow) => {
          if (newest.get(flowId) === revision) remember(flowId, flow && runsInPlace(flow) ? revision : undefined);
        },
        () => {},
      );
    },

    async execute(accepted, signal) {
      const fresh: FreshRun = { ...accepted, parentRunId: null, callDepth: 0 };
      try {
        const flow = await revisions.flow(fresh.flowId, fresh.revision);
        if (!flow || !runsInPlace(flow)) throw new Error(`revision ${fresh.revision} does not run in place`);
        const run = store.fresh(fresh, `in-place:${fresh.id}`);
        const showsData = () => tracesRunData(deps, run.accountId);
        const failedEnd = (end: RunEnd) => (end.kind === "finished" && end.status === "failed" ? end.error : null);
        const end = await traceRun(run, 1, showsData, () => executeRun(executor, run, flow, signal), failedEnd);
        if (end.kind !== "finished") return null;
        deps.metrics.count(run.accountId, end.status === "succeeded" ? "runs.succeeded" : "runs.failed");
        deps.metrics.count(PLATFORM_SCOPE, end.status === "succeeded" ? "runs.succeeded" : "runs.failed");
        return end;
      } catch (error) {
        // Taken over by a worker (the waker queued it meanwhile): the worker tells the waiter.
        if (error instanceof RunTakenOver) return null;
        // Not ended here: queued for the workers now rather than when the waker would.
        deps.logger.warn({ err: messageOf(error), run: fresh.id }, "a run could not end in place; a worker takes it");
        await deps.runQueue.requeue([fresh]).catch(() => {});
        return null;
      }
    },
  };
}
