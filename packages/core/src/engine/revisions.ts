import type { BuiltInSubject, Database, StepOptions, StoredStep } from "@platform/db";
import type { Kysely } from "kysely";
import { STEP_OPTION_DEFAULTS } from "../flows/step-defaults.ts";
import { isForEach, isParallel, isStop, isSwitch } from "../flows/step-tree.ts";
import { type CompiledPayload, compilePayload, inspectPayload } from "../templates/index.ts";

/**
 * A flow revision as the executor runs it: every template parsed and every expression
 * compiled once, when the revision is first loaded in the process (revisions never change).
 */

interface LoadedBase {
  name: string;
  /** The `if` guard; absent, the step always runs. */
  condition?: CompiledPayload;
  /** The `catch` handler. */
  handler?: LoadedStep[];
  /** Keys of the secrets its own templates name (its lists' steps name their own), read before it resolves them. */
  secretKeys: string[];
}

export interface LoadedTask extends LoadedBase {
  kind: "task";
  subject: BuiltInSubject;
  payload: CompiledPayload;
  options: StepOptions;
}

export interface LoadedSwitch extends LoadedBase {
  kind: "switch";
  cases: { when: CompiledPayload; steps: LoadedStep[] }[];
  fallback: LoadedStep[] | null;
}

export interface LoadedForEach extends LoadedBase {
  kind: "for_each";
  items: CompiledPayload;
  steps: LoadedStep[];
  concurrency: number;
}

export interface LoadedParallel extends LoadedBase {
  kind: "parallel";
  branches: [string, LoadedStep[]][];
}

export interface LoadedStop extends LoadedBase {
  kind: "stop";
  output: CompiledPayload;
  response: CompiledPayload | null;
}

export type LoadedStep = LoadedTask | LoadedSwitch | LoadedForEach | LoadedParallel | LoadedStop;

export interface LoadedFlow {
  steps: LoadedStep[];
  onFailure: LoadedStep[];
  /** How many of the flow's runs execute at once, per value of `key` (absent: one key for all). */
  concurrency?: {
    limit: number;
    key: CompiledPayload | null;
    /** Gives each run's priority: seconds it moves ahead in the key's queue (see priority.ts). */
    priority: CompiledPayload | null;
  };
  /** At most `limit` starts per `periodMs` (per key value). */
  throttle?: { limit: number; periodMs: number; key: CompiledPayload | null };
  /** At most `limit` starts taken per `periodMs` (per key value); the others are skipped. */
  rateLimit?: { limit: number; periodMs: number; key: CompiledPayload | null };
  /** One queued or running run per key value; a start that finds one is skipped or cancels it (`mode`). */
  singleton?: { mode: "skip" | "cancel"; key: CompiledPayload | null };
  /** A run not started this long after it was accepted is cancelled. */
  startTimeoutMs?: number;
  /** A start waits `periodMs` of quiet per key value, at most `timeoutMs` after the first start it replaced (null: no bound). */
  debounce?: { periodMs: number; timeoutMs: number | null; key: CompiledPayload | null };
  /** Starts gather into one run per key value, which runs at `maxItems` starts or `timeoutMs` after the first. */
  batch?: { maxItems: number; timeoutMs: number; key: CompiledPayload | null };
}

/**
 * Whether a control other than the concurrency limit judges the flow's starts: its runs are
 * claimed as a worker first takes them, for those controls judge claimed runs and count them
 * (see consumer.ts). The concurrency limit's slot gate judges a run claimed or not.
 */
export function hasStartControl(flow: LoadedFlow): boolean {
  const { throttle, rateLimit, singleton, startTimeoutMs, debounce, batch } = flow;
  return [throttle, rateLimit, singleton, startTimeoutMs, debounce, batch].some((control) => control !== undefined);
}

/** The keys of the secrets the templates of `fields` name. */
function secretKeysOf(...fields: unknown[]): string[] {
  const keys = new Set<string>();
  for (const field of fields) {
    for (const { reference } of inspectPayload(field).references) {
      if (reference.root === "secrets") keys.add(reference.path[0] as string);
    }
  }
  return [...keys];
}

function loadStep(step: StoredStep): LoadedStep {
  const guardFields = step.if === undefined ? [] : [step.if];
  const base = {
    name: step.name,
    ...(step.if === undefined ? {} : { condition: compilePayload(step.if) }),
    ...(!isStop(step) && step.catch ? { handler: loadSteps(step.catch) } : {}),
  };
  if (isSwitch(step)) {
    return {
      ...base,
      kind: "switch",
      cases: step.switch.map((branch) => ({ when: compilePayload(branch.when), steps: loadSteps(branch.steps) })),
      fallback: step.default ? loadSteps(step.default) : null,
      secretKeys: secretKeysOf(...guardFields, ...step.switch.map((branch) => branch.when)),
    };
  }
  if (isForEach(step)) {
    return {
      ...base,
      kind: "for_each",
      items: compilePayload(step.for_each),
      steps: loadSteps(step.steps),
      concurrency: step.concurrency,
      secretKeys: secretKeysOf(...guardFields, step.for_each),
    };
  }
  if (isParallel(step)) {
    return {
      ...base,
      kind: "parallel",
      branches: Object.entries(step.parallel).map(([branch, steps]) => [branch, loadSteps(steps)]),
      secretKeys: secretKeysOf(...guardFields),
    };
  }
  if (isStop(step)) {
    return {
      ...base,
      kind: "stop",
      output: compilePayload(step.stop.output ?? null),
      response: step.stop.response ? compilePayload(step.stop.response) : null,
      secretKeys: secretKeysOf(...guardFields, step.stop),
    };
  }
  return {
    ...base,
    kind: "task",
    subject: step.subject,
    payload: compilePayload(step.payload),
    options: { ...STEP_OPTION_DEFAULTS, ...step.options },
    secretKeys: secretKeysOf(...guardFields, step.payload),
  };
}

const loadSteps = (steps: StoredStep[]): LoadedStep[] => steps.map(loadStep);

export interface RevisionCache {
  /** A flow revision ready to run, or null when it does not exist. */
  flow(flowId: string, revision: number): Promise<LoadedFlow | null>;
}

/**
 * Flow revisions are immutable, so each process keeps the ones it ran (the most recent
 * `maxEntries`) and reads and compiles each once.
 */
export function createRevisionCache(db: Kysely<Database>, maxEntries = 1000): RevisionCache {
  const cache = new Map<string, Promise<LoadedFlow | null>>();

  async function load(flowId: string, revision: number): Promise<LoadedFlow | null> {
    const row = await db
      .selectFrom("flow_revisions")
      .select([
        "steps",
        "on_failure",
        "concurrency",
        "priority",
        "throttle",
        "rate_limit",
        "singleton",
        "start_timeout_s",
        "debounce",
        "batch",
      ])
      .where("flow_id", "=", flowId)
      .where("revision", "=", revision)
      .executeTakeFirst();
    if (!row) return null;
    const { concurrency, throttle, rate_limit: rateLimit, singleton, start_timeout_s: startTimeoutS } = row;
    return {
      steps: loadSteps(row.steps),
      onFailure: loadSteps(row.on_failure),
      ...(concurrency
        ? {
            concurrency: {
              limit: concurrency.limit,
              key: concurrency.key ? compilePayload(concurrency.key) : null,
              priority: row.priority ? compilePayload(row.priority.run) : null,
            },
          }
        : {}),
      ...(throttle
        ? {
            throttle: {
              limit: throttle.limit,
              periodMs: throttle.period_s * 1000,
              key: throttle.key ? compilePayload(throttle.key) : null,
            },
          }
        : {}),
      ...(rateLimit
        ? {
            rateLimit: {
              limit: rateLimit.limit,
              periodMs: rateLimit.period_s * 1000,
              key: rateLimit.key ? compilePayload(rateLimit.key) : null,
            },
          }
        : {}),
      ...(singleton
        ? { singleton: { mode: singleton.mode, key: singleton.key ? compilePayload(singleton.key) : null } }
        : {}),
      ...(startTimeoutS !== null ? { startTimeoutMs: startTimeoutS * 1000 } : {}),
      ...(row.debounce
        ? {
            debounce: {
              periodMs: row.debounce.period_s * 1000,
              timeoutMs: row.debounce.timeout_s === undefined ? null : row.debounce.timeout_s * 1000,
              key: row.debounce.key ? compilePayload(row.debounce.key) : null,
            },
          }
        : {}),
      ...(row.batch
        ? {
            batch: {
              maxItems: row.batch.max_items,
              timeoutMs: row.batch.timeout_s * 1000,
              key: row.batch.key ? compilePayload(row.batch.key) : null,
            },
          }
        : {}),
    };
  }

  return {
    flow(flowId, revision) {
      const key = `${flowId}:${revision}`;
      const cached = cache.get(key);
      if (cached !== undefined) return cached;
      const loading = load(flowId, revision);
      cache.set(key, loading);
      // A failed read is not kept; a missing revision is (it cannot appear later).
      loading.catch(() => cache.delete(key));
      if (cache.size > maxEntries) {
        const oldest = cache.keys().next().value;
        if (oldest !== undefined) cache.delete(oldest);
      }
      return loading;
    },
  };
}
