import type { Broker } from "../broker/port.ts";
import { keyedGroupCommit } from "../group-commit.ts";

/** A caller's share of a windowed count. */
export interface Taken {
  allowed: boolean;
  retryAfterSeconds: number;
}

/** The most calls one process takes from the Broker ahead of need: a hundredth of the limit, at most 1,000. */
export function leaseOf(limit: number): number {
  return Math.max(1, Math.min(1000, Math.floor(limit / 100)));
}

/** A call for a share of one key's count. */
interface Take {
  id: string;
  scope: string;
  key: string;
  limit: number;
  windowSeconds: number;
}

/** Calls this process took from the Broker ahead of need, good for one fixed window. */
interface Lease {
  window: number;
  left: number;
}

/** Leases kept at most (one per key in use: an account's runs, a flow's webhook). */
const MAX_LEASES = 100_000;

const ALLOWED: Taken = { allowed: true, retryAfterSeconds: 0 };

/**
 * Windowed counts on the Broker (`take`), taken ahead of need: a process asks for a lease
 * (`leaseOf(limit)` calls, or as many as are waiting) and spends it locally until the fixed
 * window it was granted in ends, so under load a webhook or a run start costs a Broker call
 * per lease, not one per call. The calls that find no lease left in one turn of the event
 * loop go to the Broker together. A lease's unspent calls count as used on the Broker until
 * its window slides by: every process together may fall short of the limit by at most one
 * lease each, never pass it. Limits under 200 are taken call by call (a lease of 1).
 */
export function createRateTaker(broker: Broker, now: () => number = Date.now) {
  const leases = new Map<string, Lease>();

  const windowOf = (windowSeconds: number) => Math.floor(now() / (windowSeconds * 1000));

  /** The calls of one key that found no lease, in one call of the Broker for them and the next lease. */
  const takeFromBroker = keyedGroupCommit<Take, Taken>(
    ({ id }) => id,
    async (calls) => {
      const { id, scope, key, limit, windowSeconds } = calls[0] as Take;
      const asked = Math.max(calls.length, leaseOf(limit));
      // The window the grant is counted in is the one it was asked in, not the one its answer arrives in.
      const window = windowOf(windowSeconds);
      const { granted, retryAfterSeconds } = await broker.take(scope, key, limit, windowSeconds, asked);
      const left = granted - calls.length;
      if (left > 0) {
        leases.set(id, { window, left });
        if (leases.size > MAX_LEASES) leases.delete(leases.keys().next().value as string);
      }
      const refused: Taken = { allowed: false, retryAfterSeconds };
      return calls.map((_, index) => (index < granted ? ALLOWED : refused));
    },
    // Each turn's calls go at once, whatever is in flight, as the Broker's count is atomic.
    { maxBatch: Number.POSITIVE_INFINITY, maxInFlight: Number.POSITIVE_INFINITY, isItemFault: () => false },
  );

  return function take(scope: string, key: string, limit: number, windowSeconds: number): Promise<Taken> {
    const id = `${scope}\u0000${key}\u0000${limit}\u0000${windowSeconds}`;
    const lease = leases.get(id);
    if (lease) {
      if (lease.window === windowOf(windowSeconds) && lease.left > 0) {
        lease.left -= 1;
        return Promise.resolve(ALLOWED);
      }
      leases.delete(id);
    }
    return takeFromBroker({ id, scope, key, limit, windowSeconds });
  };
}
