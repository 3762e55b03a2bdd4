/**
 * Outbound requests in flight, bounded per run and per account in this process: a request
 * takes a slot of its run, then one of its account, before it starts, and gives both back
 * when it ends. One over a bound waits for a slot, first come first served, until its
 * step's signal aborts (the step's `options.timeout`), rather than failing: a burst of a
 * run's for-each items goes out at the bound's pace instead of failing items that would
 * have succeeded a moment later. Runs take the slot of their run first, so a run at its own
 * bound never holds an account slot while it waits.
 */

import type { AccountLimits } from "../limits/account-limits.ts";
import type { StepFunction } from "./step-functions.ts";

/** A count of slots in use and the requests waiting for one, oldest first. */
interface Slots {
  used: number;
  waiting: { grant: () => void }[];
}

/** Counts kept at most (one per run or account with a request in flight or waiting); the rest are let through. */
const MAX_KEYS = 100_000;

/** Slots by key (a run's id, an account's id), each under a bound that may change between takes (a plan changed). */
function createSlotTable() {
  const table = new Map<string, Slots>();

  function release(key: string, slots: Slots, bound: number): void {
    slots.used -= 1;
    while (slots.used < bound && slots.waiting.length > 0) {
      slots.used += 1;
      slots.waiting.shift()?.grant();
    }
    if (slots.used === 0 && slots.waiting.length === 0) table.delete(key);
  }

  return {
    /** Waits for a slot of `key` under `bound`; answers its release. Rejects with the signal's reason when it aborts first. */
    take(key: string, bound: number, signal: AbortSignal): Promise<() => void> {
      signal.throwIfAborted();
      let slots = table.get(key);
      if (!slots) {
        slots = { used: 0, waiting: [] };
        if (table.size < MAX_KEYS) table.set(key, slots);
      }
      const held = slots;
      const released = () => release(key, held, bound);
      if (held.used < bound && held.waiting.length === 0) {
        held.used += 1;
        return Promise.resolve(once(released));
      }
      return new Promise((resolve, reject) => {
        const waiter = {
          grant: () => {
            signal.removeEventListener("abort", onAbort);
            resolve(once(released));
          },
        };
        const onAbort = () => {
          const at = held.waiting.indexOf(waiter);
          if (at >= 0) held.waiting.splice(at, 1);
          if (held.used === 0 && held.waiting.length === 0) table.delete(key);
          reject(signal.reason);
        };
        signal.addEventListener("abort", onAbort, { once: true });
        held.waiting.push(waiter);
      });
    },
    /** Slots of `key` in use now. */
    used: (key: string) => table.get(key)?.used ?? 0,
  };
}

/** A release that gives its slot back once, however often it is called. */
function once(release: () => void): () => void {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    release();
  };
}

export interface OutboundBounds {
  /** `run_outbound_requests_in_flight` of the account's plan. */
  run: number;
  /** `outbound_requests_in_flight` of the account's plan. */
  account: number;
}

export interface OutboundSlots {
  /**
   * Waits for a slot of the run and of its account; answers the release, to call when the
   * request has ended. Rejects with the signal's reason when it aborts while waiting.
   */
  take(request: { accountId: string; runId: string }, bounds: OutboundBounds, signal: AbortSignal): Promise<() => void>;
  /** The account's requests in flight in this process now. */
  accountInFlight(accountId: string): number;
  /** Of the account's runs, the one with the most requests in flight in this process now. */
  busiestRun(accountId: string): { runId: string; inFlight: number } | null;
}

export function createOutboundSlots(): OutboundSlots {
  const runs = createSlotTable();
  const accounts = createSlotTable();
  /** A run's key names its account first, so that an account's runs are found among all. */
  const runKey = (accountId: string, runId: string) => `${accountId}\u0000${runId}`;
  /** Requests of each run that hold both slots (a run's slot is held while it waits for its account's too). */
  const sending = new Map<string, number>();
  const count = (key: string, by: number) => {
    const now = (sending.get(key) ?? 0) + by;
    if (now === 0) sending.delete(key);
    else sending.set(key, now);
  };

  return {
    async take({ accountId, runId }, bounds, signal) {
      const key = runKey(accountId, runId);
      const releaseRun = await runs.take(key, bounds.run, signal);
      let releaseAccount: () => void;
      try {
        releaseAccount = await accounts.take(accountId, bounds.account, signal);
      } catch (error) {
        releaseRun();
        throw error;
      }
      count(key, 1);
      return once(() => {
        count(key, -1);
        releaseAccount();
        releaseRun();
      });
    },
    accountInFlight: (accountId) => accounts.used(accountId),
    busiestRun(accountId) {
      const prefix = runKey(accountId, "");
      let busiest: { runId: string; inFlight: number } | null = null;
      for (const [key, inFlight] of sending) {
        if (!key.startsWith(prefix)) continue;
        if (!busiest || inFlight > busiest.inFlight) busiest = { runId: key.slice(prefix.length), inFlight };
      }
      return busiest;
    },
  };
}

/**
 * A step function that makes one outbound request, waiting first for its slots under the
 * bounds of the account's plan; the slots are given back when it ends, however it ends.
 */
export function boundedOutbound(
  step: StepFunction,
  slots: OutboundSlots,
  limits: Pick<AccountLimits, "of">,
): StepFunction {
  return async (payload, context) => {
    const { limits: plan } = await limits.of(context.accountId);
    const release = await slots.take(
      context,
      { run: plan.run_outbound_requests_in_flight, account: plan.outbound_requests_in_flight },
      context.signal,
    );
    try {
      return await step(payload, context);
    } finally {
      release();
    }
  };
}
