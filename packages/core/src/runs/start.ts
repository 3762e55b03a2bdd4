import type { DatabaseHandle } from "@platform/db";
import type { RunQueue } from "../engine/run-queue.ts";
import { DomainError } from "../errors.ts";
import { isStorableJson } from "../input-guard.ts";
import type { AccountLimits } from "../limits/account-limits.ts";
import type { Logger } from "../logger.ts";
import type { MetricsRecorder } from "../monitoring/recorder.ts";
import { UUID } from "../schemas.ts";
import { accepting } from "../tracing/spans.ts";
import { createRunInserter, type RanInPlace, runRow, type StartedRun } from "./insert.ts";

export interface StartRunInput {
  accountId: string;
  flowId: string;
  /** The trigger data (any JSON; a webhook's is an object). */
  trigger: unknown;
  /** The run this one replays. */
  replayOf?: string;
  /** The webhook delivery id: a second start with the same one for the flow starts nothing. */
  deliveryId?: string;
  /** The flow revision to run; absent, the flow's current one (a replay runs the one its original ran). */
  revision?: number;
  /** The run whose `flow.call` step starts this one, and how deep the calls go. */
  parent?: { runId: string; depth: number };
  /** What started it, naming its acceptance span (`accept webhook`). */
  via?: RunSource;
  /** The `traceparent` header the start came with: its span continues it, links to it or not (TRACE_INCOMING). */
  traceparent?: string | null;
}

/** What starts runs one by one (a schedule's ticks and bulk replays start theirs in a transaction). */
export type RunSource = "webhook" | "gateway" | "manual" | "replay" | "flow.call" | "mcp";

/** A start as written: the id is chosen first, so a waiter can listen before the run is queued. */
export interface QueuedStart extends StartRunInput {
  id: string;
  /** The process waiting for the outcome (wait mode). */
  waiter?: string;
  /**
   * Executes the run before it is recorded (engine/in-place.ts), once the start is judged
   * and its acceptance span begun (`traceparent`: that span's); null when it was not.
   */
  runAhead?: (traceparent: string | null) => Promise<RanInPlace | null>;
}

/**
 * Starting runs someone waits for (webhooks, gateways, starts by hand, replays, `flow.call`):
 * the input is checked and the account's `runs_per_minute` spent, then the run is created as
 * every run is (`createRunInserter`, runs/insert.ts): recorded `queued` and put on the run
 * stream, in that order, before answering. What would fail a shared INSERT for every start
 * in it (a malformed id, text jsonb refuses) is refused here first.
 */
export function createRunStarter(deps: {
  database: DatabaseHandle;
  runQueue: RunQueue;
  metrics: MetricsRecorder;
  logger: Logger;
  /** The largest trigger data, in bytes of JSON (TRIGGER_MAX_BYTES). */
  triggerMaxBytes: number;
  /** Accounts' plans: runs started per minute. */
  limits: AccountLimits;
}) {
  const inserter = createRunInserter(deps);

  return async function start(input: QueuedStart): Promise<StartedRun> {
    // Checked here: one malformed id would fail the statement of every start in its batch.
    if (!UUID.test(input.flowId)) throw new DomainError("not_found", "flow not found");
    if (input.replayOf !== undefined && !UUID.test(input.replayOf)) throw new DomainError("not_found", "run not found");
    const trigger = JSON.stringify(input.trigger ?? null);
    // Characters are at most 3 bytes of UTF-8: most trigger data needs no count.
    const triggerBytes = trigger.length * 3 <= deps.triggerMaxBytes ? trigger.length : Buffer.byteLength(trigger);
    if (triggerBytes > deps.triggerMaxBytes) {
      throw new DomainError(
        "payload_too_large",
        `the trigger data is ${triggerBytes.toLocaleString("en")} bytes of JSON; a run may start with at most ${deps.triggerMaxBytes.toLocaleString("en")} (TRIGGER_MAX_BYTES)`,
      );
    }
    const attributes = { "platform.run.id": input.id, "platform.flow.id": input.flowId };
    const callers = { traceparent: input.traceparent, internal: input.parent !== undefined };
    return accepting(input.via ?? "manual", attributes, callers, async (traceparent) => {
      const rowOf = (ranInPlace?: RanInPlace) =>
        runRow({
          id: input.id,
          accountId: input.accountId,
          flowId: input.flowId,
          trigger,
          revision: input.revision,
          replayOf: input.replayOf,
          deliveryId: input.deliveryId,
          waiter: input.waiter,
          parent: input.parent,
          traceparent,
          ranInPlace,
        });
      const row = rowOf();
      // The last check before the shared INSERT: what jsonb refuses would fail every start of the batch.
      if (!isStorableJson(row.json)) {
        throw new DomainError("validation_error", "invalid input: the trigger data holds text that cannot be stored");
      }
      await deps.limits.spend(input.accountId, "runs_per_minute");
      const ran = await input.runAhead?.(traceparent ?? null);
      // An execution whose records jsonb would refuse is forgotten: the run is queued, and its worker records why.
      return inserter.insert(ran && isStorableJson(ran.record) ? rowOf(ran) : row);
    });
  };
}
