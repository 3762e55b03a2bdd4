import type { Broker } from "../broker/port.ts";

/** A caller's share of a windowed count. */
export interface Taken {
  allowed: boolean;
  retryAfterSeconds: number;
}

/** The most calls one process takes from the Broker ahead of need: a hundredth of the limit, at most 1,000. */
export function leaseOf(limit: number): number {
  return Math.max(1, Math.min(1000, Math.floor(limit / 100)));
}

interface Queue {
  scope: string;
  key: string;
  limit: number;
  windowSeconds: number;
  waiting: { resolve: (taken: Taken) => void; reject: (error: unknown) => void }[];
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
  const queues = new Map<string, Queue>();
  const leases = new Map<string, Lease>();

  const windowOf = (windowSeconds: number) => Math.floor(now() / (windowSeconds * 1000));

  async function flush(id: string, queue: Queue): Promise<void> {
    queues.delete(id);
    const asked = Math.max(queue.waiting.length, leaseOf(queue.limit));
    // The window the grant is counted in is the one it was asked in, not the one its answer arrives in.
    const window = windowOf(queue.windowSeconds);
    try {
      const { granted, retryAfterSeconds } = await broker.take(
        queue.scope,
        queue.key,
        queue.limit,
        queue.windowSeconds,
        asked,
      );
      const refused: Taken = { allowed: false, retryAfterSeconds };
      for (const [index, waiting] of queue.waiting.entries()) waiting.resolve(index < granted ? ALLOWED : refused);
      const left = granted - queue.waiting.length;
      if (left > 0) {
        leases.set(id, { window, left });
        if (leases.size > MAX_LEASES) leases.delete(leases.keys().next().value as string);
      }
    } catch (error) {
      for (const waiting of queue.waiting) waiting.reject(error);
    }
  }

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
    let queue = queues.get(id);
    if (!queue) {
      const created: Queue = { scope, key, limit, windowSeconds, waiting: [] };
      queues.set(id, created);
      setImmediate(() => void flush(id, created));
      queue = created;
    }
    const joined = queue;
    return new Promise<Taken>((resolve, reject) => joined.waiting.push({ resolve, reject }));
  };
}
