import type { Database } from "@platform/db";
import type { Kysely } from "kysely";
import { tracesRunData } from "../accounts/settings.ts";
import type { CoreConfig } from "../config.ts";
import { messageOf } from "../errors.ts";
import { MAX_FLOW_STEPS } from "../flows/steps.ts";
import type { AccountLimits } from "../limits/account-limits.ts";
import type { Logger } from "../logger.ts";
import type { RanInPlace } from "../runs/insert.ts";
import type { InPlaceRunner } from "../runs/service.ts";
import type { Sealer } from "../sealing.ts";
import type { DefinitionCache } from "../storage/definition-cache.ts";
import { traceRun } from "../tracing/run-spans.ts";
import { COMPUTING_SUBJECTS, computingStepFunctions } from "./built-ins.ts";
import type { RunEvents } from "./events.ts";
import { ExecutionLimitReached, type ExecutorDeps, executeRun, runEndError } from "./executor.ts";
import { createRevisionCache, hasStartControl, type LoadedFlow, type LoadedStep } from "./revisions.ts";
import { createSecretsReader } from "./secrets-reader.ts";
import { endColumns, freshRun, type RunStore, type RunWrite, type StepChange, stepRow } from "./store.ts";

/** Flows this process remembers the runs-in-place revision of (the most recently started). */
const MAX_FLOWS = 10_000;

/**
 * Most steps a run executes in place, for-each items' steps each counted: as many as one
 * flow may hold, so that a for-each makes a start cost the API process no more than a flow
 * without one already can. A run whose items would take it past goes to the workers.
 */
const IN_PLACE_MAX_STEPS = MAX_FLOW_STEPS;

/**
 * Most milliseconds a run executes in place. A start no one waits for is acknowledged once its
 * run has ended, and a webhook's sender gives up after seconds: a run still computing after
 * this goes to the workers, which execute it from its start (what it computed here is lost).
 */
const IN_PLACE_MAX_MS = 1000;

/** Whether every step of a list only computes (see `runsInPlace`). */
function computesOnly(steps: LoadedStep[]): boolean {
  return steps.every((step) => {
    if (step.handler && !computesOnly(step.handler)) return false;
    if (step.kind === "task") return COMPUTING_SUBJECTS.has(step.subject);
    if (step.kind === "stop") return true;
    if (step.kind === "switch") {
      return step.cases.every((branch) => computesOnly(branch.steps)) && computesOnly(step.fallback ?? []);
    }
    if (step.kind === "for_each") return computesOnly(step.steps);
    return step.branches.every(([, steps]) => computesOnly(steps));
  });
}

/**
 * Whether a start of the flow runs in the process that accepted it: every step
 * (its `catch` handler and the flow's `on_failure` steps too) is a `transform`, a `respond`,
 * a `stop`, or a `switch`, `for_each` or `parallel` of such steps, with `if` guards of any
 * kind; and no flow control judges its starts (a concurrency limit, a throttle, a rate
 * limit, a singleton, a debounce, a batch or a start timeout: each needs the queue).
 * A start executes at most IN_PLACE_MAX_STEPS steps, for at most IN_PLACE_MAX_MS, here.
 */
export function runsInPlace(flow: LoadedFlow): boolean {
  return (
    flow.concurrency === undefined && !hasStartControl(flow) && computesOnly(flow.steps) && computesOnly(flow.onFailure)
  );
}

export interface InPlaceDeps {
  db: Kysely<Database>;
  sealer: Sealer;
  limits: AccountLimits;
  events: RunEvents;
  logger: Logger;
  storageDefinitions: DefinitionCache;
  config: Pick<CoreConfig["runs"], "stepOutputMaxBytes" | "forEachMaxItems" | "logLimits">;
}

const notInPlace = () => Promise.reject(new Error("a run executed in place starts no other run"));

/**
 * Starts of flows that only compute, executed where they were accepted (issue 34): the run
 * is executed first, in memory (its writes kept, not sent), and then recorded as every run
 * is (runs/insert.ts) but as it ended: its INSERT writes its status, its end and its step
 * records in one statement. Nothing goes through the run queue: no stream round trip, no
 * worker's claim, no notification of the end, one statement for the whole run. A wait-mode
 * start answers with the run's end; a start no one waits for (a webhook acknowledged, a
 * start by hand without `wait`) is acknowledged once its run has ended, which costs its
 * sender the run's computing (time-sliced and bounded as every expression is, see
 * docs/security.md) and spares the queue's round trip and the worker's writes.
 * Its steps have no outside effects, so a run executed and never recorded (the process died
 * before its INSERT, or the INSERT failed) is a run that never happened, as for any start
 * whose caller heard no answer. A run that parks (a retry's backoff too long to wait for in
 * place) is recorded parked, the waker's and the workers' from then on like every parked run.
 *
 * Which flows run in place is learned per process: each start's INSERT answers the revision
 * it runs (`learn`), and a later start is executed ahead only when that revision is known to
 * run in place (`revisionOf`). Its INSERT records it as executed only when the flow's current
 * revision is still that one (`ranInPlace`, compared in the statement), else as queued like
 * any start, for the workers; a flow saved since, or one a process has not started yet,
 * goes through the queue.
 */
export function createInPlaceRunner(deps: InPlaceDeps): InPlaceRunner {
  const revisions = createRevisionCache(deps.db);
  const executor: Omit<ExecutorDeps, "store"> = {
    functions: computingStepFunctions(),
    secrets: createSecretsReader(deps),
    outputMaxBytes: deps.config.stepOutputMaxBytes,
    forEachMaxItems: deps.config.forEachMaxItems,
    stepLimit: IN_PLACE_MAX_STEPS,
    timeLimitMs: IN_PLACE_MAX_MS,
    logLimits: deps.config.logLimits,
    events: deps.events,
    startChild: notInPlace,
    childOutcome: notInPlace,
    maxCallDepth: 0,
    limits: deps.limits,
  };
  /**
   * The account's flow → the revision known to run in place. Keyed by the account too: a start
   * names a flow id of its own choosing, and only the flow's account, whose INSERT found the
   * flow its own, teaches this process that it runs in place.
   */
  const known = new Map<string, number>();
  /** The account's flow → the newest revision learned, so that a late answer about an older one changes nothing. */
  const newest = new Map<string, number>();
  const keyOf = (accountId: string, flowId: string) => `${accountId} ${flowId}`;

  const remember = (key: string, revision: number | undefined) => {
    if (revision === undefined) known.delete(key);
    else {
      if (known.size >= MAX_FLOWS && !known.has(key)) known.delete(known.keys().next().value as string);
      known.set(key, revision);
    }
  };

  return {
    revisionOf: (accountId, flowId) => known.get(keyOf(accountId, flowId)),

    learn(accountId, flowId, revision) {
      const key = keyOf(accountId, flowId);
      if (known.get(key) === revision || (newest.get(key) ?? 0) > revision) return;
      if (newest.size >= MAX_FLOWS && !newest.has(key)) newest.delete(newest.keys().next().value as string);
      newest.set(key, revision);
      revisions.flow(flowId, revision).then(
        (flow) => {
          if (newest.get(key) === revision) remember(key, flow && runsInPlace(flow) ? revision : undefined);
        },
        () => {},
      );
    },

    async runAhead(accepted, signal) {
      const startedAt = performance.now();
      try {
        const flow = await revisions.flow(accepted.flowId, accepted.revision);
        if (!flow || !runsInPlace(flow)) return null;
        const run = freshRun({ ...accepted, parentRunId: null, callDepth: 0 }, `in-place:${accepted.id}`);
        const writes: RunWrite[] = [];
        const keeping: RunStore = {
          claim: () => Promise.reject(new Error("a run executed in place is never claimed")),
          fresh: freshRun,
          write: async (change) => {
            writes.push(change);
            return true;
          },
        };
        const showsData = () => tracesRunData(deps, run.accountId);
        const execute = () => executeRun({ ...executor, store: keeping }, run, flow, signal);
        const end = await traceRun(run, null, showsData, execute, runEndError);
        const record = recordOf(writes, performance.now() - startedAt);
        if (!record) return null;
        const { kind, ...ended } = end;
        return { revision: accepted.revision, record, end: kind === "finished" ? (ended as FinishedEnd) : null };
      } catch (error) {
        // Not executed here: its start queues it for the workers.
        if (error instanceof ExecutionLimitReached) return null;
        deps.logger.warn({ err: messageOf(error), run: accepted.id }, "a run could not be executed in place; queued");
        return null;
      }
    },
  };
}

type FinishedEnd = NonNullable<RanInPlace["end"]>;

/**
 * The writes of a run executed in place as the one its INSERT makes (runs/insert.ts): the
 * last write's status and end, every step record as last changed; null when the run did not
 * leave the executor's hands (its last write did not release it).
 */
function recordOf(writes: RunWrite[], tookMs: number): string | null {
  const last = writes.at(-1);
  if (!last?.release) return null;
  const steps = new Map<string, StepChange>();
  for (const write of writes) for (const change of write.steps) steps.set(change.name, change);
  return JSON.stringify({
    ...endColumns(last),
    took_ms: Math.round(tookMs),
    steps: [...steps.values()].map(stepRow),
  });
}
