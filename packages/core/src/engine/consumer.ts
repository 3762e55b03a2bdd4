import { z } from "zod";
import { tracesRunData } from "../accounts/settings.ts";
import { isDomainError, messageOf } from "../errors.ts";
import { countRunEnd } from "../monitoring/recorder.ts";
import type { Services } from "../services.ts";
import { traceRun } from "../tracing/run-spans.ts";
import { defineConsumer, type WorkerConsumer } from "../worker/catalog.ts";
import { createBatches } from "./batch.ts";
import { createStepFunctions, type ModuleSteps } from "./built-ins.ts";
import { createSlotGate, limitKeyOf } from "./concurrency.ts";
import { createDebounces } from "./debounce.ts";
import {
  type ExecutorDeps,
  executeRun,
  RunClaimedElsewhere,
  type RunEnd,
  RunTakenOver,
  runEndError,
} from "./executor.ts";
import { createRunLeases, type RunLease } from "./leases.ts";
import { createModuleSteps } from "./module-steps.ts";
import { priorityOf } from "./priority.ts";
import { createRateLimits } from "./rate-limit.ts";
import { createRevisionCache, hasStartControl } from "./revisions.ts";
import { RUN_LANE_QUANTUM, RUN_STREAM } from "./run-queue.ts";
import { createSecretsReader } from "./secrets-reader.ts";
import { createSingletons } from "./singleton.ts";
import { startTimedOut, wakeByStartDeadline } from "./start-timeout.ts";
import { type ClaimedRun, createRunStore, createTriggerReader, type RunStore } from "./store.ts";
import { createThrottles } from "./throttle.ts";
import { unfixableFailure } from "./unfixable.ts";
import { publishRunDone } from "./waiting.ts";

/**
 * An entry of the run stream: the run's id, and, in the entry that queued it as it was
 * created (runs/insert.ts), the run as accepted (`start`), so that the entry's first delivery
 * executes it without claiming its row (see `RunStore.fresh`); its trigger data only where
 * the queue's entries carry it (see `createRunQueue`), else read from the row. Entries that
 * queue a run again (the waker's, the recovery's) name the run only.
 */
export const runEntrySchema = z.object({
  run: z.uuid(),
  start: z
    .object({
      account: z.string(),
      flow: z.uuid(),
      revision: z.number().int(),
      waiter: z.string().nullable(),
      /** Absent when the entry does not carry it (JSON has no undefined). */
      trigger: z.unknown().optional(),
      /** A run started by a `flow.call`: its parent and how deep the calls go. */
      parent: z.uuid().optional(),
      depth: z.number().int().optional(),
      /** The concurrency key of the slot the run was handed (store.ts): it holds it already. */
      slot: z.string().optional(),
      /** Its acceptance span's `traceparent`: its spans continue that trace. */
      trace: z.string().optional(),
    })
    .optional(),
});

export type RunEntry = z.output<typeof runEntrySchema>;

/**
 * The run consumer: each worker member keeps up to 64 runs going at once, so their
 * database writes share statements.
 */
export const runConsumer = defineConsumer({
  name: "flow-runs",
  stream: RUN_STREAM,
  // The streams to read are the deployment's partitions: set by `runWorkerConsumer`.
  schema: runEntrySchema,
  visibilityTimeoutMs: 10_000,
  // Deliveries of one entry: a handler only fails when the database or broker does.
  retry: { maxAttempts: 20, backoffMs: 1000, maxBackoffMs: 60_000 },
  capacity: 64,
  // Producers append to accounts' lanes (see `RunQueue`).
  laneQuantum: RUN_LANE_QUANTUM,
});

/** Deliveries after which a run that keeps being interrupted (its worker dies each time, or its delivery fails) fails. */
export const MAX_RUN_DELIVERIES = 10;

async function isCancelled(services: Pick<Services, "db">, runId: string): Promise<boolean> {
  const row = await services.db.selectFrom("runs").select("status").where("id", "=", runId).executeTakeFirst();
  return row?.status === "cancelled";
}

/** Ends a run the executor will not take further; null when it was not this delivery's to end. */
async function failRun(store: RunStore, run: ClaimedRun, error: string): Promise<RunEnd | null> {
  const written = await store.write({
    id: run.id,
    holder: run.holder,
    status: "failed",
    steps: [],
    error,
    release: true,
    finished: true,
    claim: run.claimed ? undefined : { startedAt: new Date() },
    slot: run.slot,
  });
  if (!written) return null;
  return { kind: "finished", status: "failed", output: null, response: null, error };
}

/**
 * The run an entry's delivery executes: on its first delivery as the entry describes it (its
 * trigger data read when the entry does not carry it), else claimed.
 */
async function takeRun(
  store: RunStore,
  readTrigger: (runId: string) => Promise<unknown>,
  entry: RunEntry,
  entryId: string,
  attempt: number,
): Promise<ClaimedRun | null> {
  const { start } = entry;
  if (start === undefined || attempt > 1) return store.claim(entry.run, entryId, attempt);
  const trigger = start.trigger === undefined ? await readTrigger(entry.run) : start.trigger;
  // A run deleted since it was queued (its flow or account removed): nothing to execute.
  if (trigger === undefined) return null;
  return store.fresh(
    {
      id: entry.run,
      accountId: start.account,
      flowId: start.flow,
      revision: start.revision,
      trigger,
      waiter: start.waiter,
      parentRunId: start.parent ?? null,
      callDepth: start.depth ?? 0,
      slot: start.slot,
      traceparent: start.trace ?? null,
    },
    entryId,
  );
}

/** The run consumer with its handler, bound to this process's services. */
export function runWorkerConsumer(services: Services, modules?: ModuleSteps): WorkerConsumer {
  const { leaseMs } = services.config.runs;
  const store = createRunStore(services.database, leaseMs, services.runQueue);
  const readTrigger = createTriggerReader(services.database);
  const slots = createSlotGate(services.db);
  const rates = createRateLimits(services);
  const singletons = createSingletons(services);
  const debounces = createDebounces(services);
  const batches = createBatches(services, services.config.runs.triggerMaxBytes);
  const throttles = createThrottles(services.db);
  const leases = createRunLeases(services.database, leaseMs, services.logger);
  const revisions = createRevisionCache(services.db);
  const own = modules ? undefined : createModuleSteps(services.config.steps);
  const deps: ExecutorDeps = {
    store,
    functions: createStepFunctions(services, modules ?? own),
    secrets: createSecretsReader(services),
    outputMaxBytes: services.config.runs.stepOutputMaxBytes,
    forEachMaxItems: services.config.runs.forEachMaxItems,
    logLimits: services.config.runs.logLimits,
    events: services.events,
    startChild: (input) => services.runs.start(input),
    childOutcome: (accountId, runId) => services.runs.outcome(accountId, runId),
    maxCallDepth: services.config.runs.flowCallMaxDepth,
    limits: services.limits,
  };
  return {
    close: async () => {
      leases.close();
      await own?.close();
    },
    definition: {
      ...runConsumer,
      queues: services.runQueue.partitions,
      // PGlite runs one statement at a time: a second member would only wait for the first.
      ...(services.database.kind === "pglite" ? { concurrency: 1 } : {}),
    },
    async handle(payload, context) {
      const claimedAt = Date.now();
      const entry = payload as RunEntry;
      const accepted =
        entry.start !== undefined && context.attempt === 1
          ? await revisions.flow(entry.start.flow, entry.start.revision)
          : null;
      // A run of a flow with a control that judges starts is claimed at once (those controls
      // judge and count claimed runs); the slot gate takes a run as its entry carries it.
      const claimFirst = accepted !== null && hasStartControl(accepted);
      const run = claimFirst
        ? await store.claim(entry.run, context.entryId, context.attempt)
        : await takeRun(store, readTrigger, entry, context.entryId, context.attempt);
      // Ended, unknown, or held by another entry's delivery: nothing to do for this one.
      if (!run) return;
      // A run claimed here holds its lease once it may execute; one taken from its entry, once its first write claims it.
      const lost = new AbortController();
      let lease: RunLease | undefined;
      /** Whether this delivery holds the run in the database (claimed, or taken by its first write). */
      let held = run.claimed;
      const hold = (at: number) => {
        held = true;
        const renewed = leases.hold(run.id, run.holder, at);
        renewed.signal.addEventListener("abort", () => lost.abort(renewed.signal.reason), { once: true });
        lease = renewed;
      };
      let end: RunEnd | null;
      try {
        if (context.attempt > MAX_RUN_DELIVERIES) {
          // Checked before anything else of the run is done: whatever kept failing, the run ends here.
          end = await failRun(
            store,
            run,
            `the run was delivered ${context.attempt - 1} times without an end (its worker stopped, or could not go on)`,
          );
        } else {
          const limits = accepted ?? (run.claimed ? await revisions.flow(run.flowId, run.revision) : null);
          const { startTimeoutMs, rateLimit, singleton, debounce, batch, throttle, concurrency } = limits ?? {};
          // The flow controls, in the order docs/guide/flows.md gives: one that ends or parks the run ends this delivery.
          if (startTimeoutMs !== undefined && (await startTimedOut(services, run, startTimeoutMs))) return;
          if (rateLimit && !(await rates.take(run, rateLimit, await limitKeyOf(rateLimit, run.trigger, "rate_limit"))))
            return;
          if (
            singleton &&
            !(await singletons.take(run, singleton, await limitKeyOf(singleton, run.trigger, "singleton")))
          )
            return;
          /** A run a control parks is woken by its start deadline at the latest. */
          const parked = async () => {
            if (startTimeoutMs !== undefined) await wakeByStartDeadline(services, run, startTimeoutMs);
          };
          if (debounce && !(await debounces.take(run, debounce, await limitKeyOf(debounce, run.trigger, "debounce"))))
            return parked();
          if (batch) {
            const closed = await batches.take(run, batch, await limitKeyOf(batch, run.trigger, "batch"));
            if (!closed) return parked();
            // The batch run runs with the list of its batch's trigger data (the later controls' keys read it too).
            run.trigger = closed.trigger;
          }
          if (throttle && !(await throttles.take(run, throttle, await limitKeyOf(throttle, run.trigger, "throttle"))))
            return parked();
          // A run handed a slot (or keeping one through its worker's crash) holds it, under the key it was admitted by.
          const key = concurrency
            ? (run.heldSlotKey ?? (await limitKeyOf(concurrency, run.trigger, "concurrency")))
            : undefined;
          if (concurrency && key !== undefined) {
            const slot = { key, limit: concurrency.limit };
            if (run.heldSlotKey === null) {
              const ahead = concurrency.priority ? await priorityOf(concurrency.priority, run.trigger) : 0;
              if (!(await slots.take(run, slot, ahead))) return parked();
            }
            run.slot = slot;
          }
          if (run.claimed) hold(claimedAt);
          const flow = await revisions.flow(run.flowId, run.revision);
          if (!flow) {
            end = await failRun(store, run, `revision ${run.revision} of the flow no longer exists`);
          } else {
            const signal = AbortSignal.any([context.signal, lost.signal]);
            const execution = () => executeRun(deps, run, flow, signal, hold);
            const showsData = () => tracesRunData(services, run.accountId);
            end = await traceRun(run, context.attempt, showsData, execution, runEndError).catch(
              async (error: unknown) => {
                if (error instanceof RunClaimedElsewhere) return null;
                // Cancelled while it ran: the write that found it so ends this delivery's work.
                if (error instanceof RunTakenOver && (await isCancelled(services, run.id))) return null;
                throw error;
              },
            );
          }
        }
      } catch (error) {
        // What every later delivery would meet too fails the run now, once (see unfixable.ts).
        const failure = unfixableFailure(error);
        if (failure === undefined) throw error;
        context.logger.warn({ err: messageOf(error), run: run.id }, "the run cannot go on; it fails");
        end = await failRun(store, { ...run, claimed: held }, failure);
      } finally {
        lease?.end();
      }
      if (end?.kind !== "finished") return;
      // The run that called this one goes on (its wait looks at this run's end).
      if (run.parentRunId) await services.events.wake(run.parentRunId);
      countRunEnd(services.metrics, run.accountId, end.status);
      if (run.waiter) {
        await publishRunDone(services.broker, run.waiter, { id: run.id, ...end }).catch((error: unknown) => {
          context.logger.warn(
            { err: isDomainError(error) ? error.message : String(error) },
            "could not tell the waiter",
          );
        });
      }
    },
  };
}
