import { idTime } from "@platform/db";
import { sql } from "kysely";
import { passOnSlots } from "./concurrency.ts";
import { type ControlDeps, cancelRuns, tellEnded } from "./run-ends.ts";
import type { ClaimedRun } from "./store.ts";

/**
 * Per-flow start timeouts (`start_timeout_s`): a run that has not begun a step
 * `start_timeout_s` after it was accepted (its id's time, a UUIDv7's) ends `cancelled` with
 * the reason, so nothing acts on stale data hours later. It is judged each time a worker
 * takes it before its first step, ahead of every other flow control; a run that a later
 * control parks (a slot, a throttle turn, a debounce, a batch) is woken no later than its
 * deadline (`wakeByStartDeadline`), so it is cancelled on time, not when a worker happens to
 * reach it.
 */

const hasBegun = (run: ClaimedRun) => Object.keys(run.steps).length > 0;

/** When a run that has not begun must have: the deadline its start timeout sets. */
const startDeadline = (run: ClaimedRun, timeoutMs: number) => idTime(run.id) + timeoutMs;

/**
 * True when a claimed run waited past its start timeout: cancelled here, whoever waits on it
 * told (or no longer this delivery's to cancel). False when it may go on.
 */
export async function startTimedOut(deps: ControlDeps, run: ClaimedRun, timeoutMs: number): Promise<boolean> {
  if (hasBegun(run) || startDeadline(run, timeoutMs) > Date.now()) return false;
  const cancelled = await cancelRuns(deps.db, sql`id = ${run.id} and held_by = ${run.holder}`, {
    text: `waited more than ${timeoutMs / 1000} s to start (start_timeout_s)`,
    takenBy: null,
  });
  await passOnSlots(deps, cancelled);
  await tellEnded(deps, cancelled, () => "cancelled");
  return true;
}

/**
 * A run a later control parked before its first step (given back, `queued`, with a wake) is
 * woken by its deadline at the latest, to be cancelled then.
 */
export async function wakeByStartDeadline(deps: ControlDeps, run: ClaimedRun, timeoutMs: number): Promise<void> {
  if (hasBegun(run)) return;
  const deadline = new Date(startDeadline(run, timeoutMs));
  await sql`
    update runs set wake_at = least(wake_at, ${deadline}::timestamptz)
    where id = ${run.id} and status in ('queued', 'running') and held_by is null`.execute(deps.db);
}
