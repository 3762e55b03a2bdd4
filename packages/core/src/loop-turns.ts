/**
 * Tenants' work that used up its slice of the event loop (an expression's evaluation, see
 * templates/expression-guard.ts; a run's steps, see engine/executor.ts), in the order it did.
 * One of them goes on per turn of the loop, so that however much of it is under way, it takes
 * at most one slice of each turn and everything else waiting (requests, replies from the
 * database and the broker, other runs) goes on between; they take turns round-robin.
 */

/** Milliseconds of tenants' work between two turns of the event loop. */
export const SLICE_MS = 2;

const waiting: (() => void)[] = [];

function resumeOne(): void {
  waiting.shift()?.();
  if (waiting.length > 0) setImmediate(resumeOne);
}

/** Resolves at a later turn of the event loop, in turn with the other work that used up its slice. */
export function nextTurn(): Promise<void> {
  return new Promise<void>((resolve) => {
    waiting.push(resolve);
    if (waiting.length === 1) setImmediate(resumeOne);
  });
}
