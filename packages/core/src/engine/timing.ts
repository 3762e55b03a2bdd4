/** Waits at most this long inside the worker; longer waits park the run (no worker slot held). */
export const IN_PROCESS_WAIT_MS = 1000;

/** The longest wait between two attempts, unless `backoff_ms` itself is longer. */
export const MAX_BACKOFF_MS = 3_600_000;

/**
 * The wait before attempt `failed + 1`: `backoff_ms` doubled for each failure after the
 * first, capped, then jittered to between half and all of it (so runs that failed
 * together do not retry together).
 */
export function backoffDelay(backoffMs: number, failed: number, random = Math.random): number {
  const ceiling = Math.min(Math.max(MAX_BACKOFF_MS, backoffMs), backoffMs * 2 ** Math.max(0, failed - 1));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}

export class StepTimeout extends Error {
  override name = "StepTimeout";
}

/**
 * Runs one attempt with its time limit: the function gets a signal that aborts at the
 * limit (or when `outer` aborts), and the attempt ends then even if the function ignores it.
 */
export async function withTimeout<T>(
  timeoutMs: number,
  outer: AbortSignal,
  attempt: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  const onOuter = () => controller.abort(outer.reason);
  outer.addEventListener("abort", onOuter);
  const timer = setTimeout(() => controller.abort(new StepTimeout(`timed out after ${timeoutMs} ms`)), timeoutMs);
  try {
    const aborted = new Promise<never>((_, reject) => {
      controller.signal.addEventListener("abort", () => reject(controller.signal.reason));
    });
    return await Promise.race([attempt(controller.signal), aborted]);
  } finally {
    clearTimeout(timer);
    outer.removeEventListener("abort", onOuter);
  }
}
