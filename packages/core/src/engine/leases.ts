import type { DatabaseHandle } from "@platform/db";
import { sql } from "kysely";
import { messageOf } from "../errors.ts";
import type { Logger } from "../logger.ts";

/** A worker's hold on one run it executes. */
export interface RunLease {
  /** Aborted when the hold is lost: another delivery took the run, or the lease could not be renewed in time. */
  readonly signal: AbortSignal;
  /** The run left this worker's hands (ended, parked, or given up): stop renewing. */
  end(): void;
}

export interface RunLeases {
  /** Keeps renewing the lease of a run claimed at `claimedAt` (epoch ms, taken before the claim was sent). */
  hold(runId: string, holder: string, claimedAt: number): RunLease;
  /** Stops renewing every lease (the worker is stopping). */
  close(): void;
}

interface Held {
  holder: string;
  /** When the last renewal that succeeded was sent (the lease runs at least `leaseMs` from then). */
  renewedAt: number;
  controller: AbortController;
}

/**
 * The worker's side of the run leases: a claim sets `runs.lease_until` (store.ts), and every
 * third of the lease one statement moves it ahead for every run this process holds. The
 * lease is what tells a live holder from a dead one when the stream cannot (its entries
 * lost with Redis's data, recovery.ts): the recovery releases a run only once its lease is
 * over. A holder that cannot renew (the database unreachable, the run taken over) gives the
 * run up when half the lease has gone by since its last renewal, well before anyone may
 * release it, so a step never runs in two places at once.
 */
export function createRunLeases(database: DatabaseHandle, leaseMs: number, logger?: Logger): RunLeases {
  const held = new Map<string, Held>();
  let renewing = false;

  let timer: ReturnType<typeof setInterval> | undefined;

  /** Renewals run while this process holds runs, and not otherwise. */
  const forget = (runId: string) => {
    held.delete(runId);
    if (held.size > 0 || !timer) return;
    clearInterval(timer);
    timer = undefined;
  };

  const lose = (runId: string, reason: string) => {
    const entry = held.get(runId);
    if (!entry) return;
    forget(runId);
    entry.controller.abort(new Error(`the run's lease was lost (${reason}): another worker may take it over`));
  };

  async function renew(): Promise<void> {
    const now = Date.now();
    for (const [runId, entry] of held) {
      if (now - entry.renewedAt >= leaseMs / 2) lose(runId, "not renewed in time");
    }
    if (renewing || held.size === 0) return;
    renewing = true;
    const batch = [...held].map(([id, entry]) => ({ id, holder: entry.holder }));
    try {
      const { rows } = await sql<{ id: string }>`
        update runs as r set lease_until = now() + ${leaseMs}::integer * interval '1 millisecond'
        from jsonb_to_recordset(${JSON.stringify(batch)}::jsonb) as v(id uuid, holder text)
        where r.id = v.id and r.id = any(${batch.map((run) => run.id)}::uuid[]) and r.held_by = v.holder
        returning r.id`.execute(database.db);
      const renewed = new Set(rows.map((row) => row.id));
      for (const { id, holder } of batch) {
        const entry = held.get(id);
        if (entry?.holder !== holder) continue;
        if (renewed.has(id)) entry.renewedAt = now;
        else lose(id, "taken over");
      }
    } catch (error) {
      logger?.warn({ err: messageOf(error) }, "could not renew run leases");
    } finally {
      renewing = false;
    }
  }

  return {
    hold(runId, holder, claimedAt) {
      const controller = new AbortController();
      held.set(runId, { holder, renewedAt: claimedAt, controller });
      timer ??= setInterval(() => {
        renew().catch(() => {});
      }, leaseMs / 3);
      return {
        signal: controller.signal,
        end() {
          if (held.get(runId)?.controller === controller) forget(runId);
        },
      };
    },
    close() {
      held.clear();
      clearInterval(timer);
      timer = undefined;
    },
  };
}
