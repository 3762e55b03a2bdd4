import type { Broker } from "../broker/port.ts";

/** A caller's share of a windowed count. */
export interface Taken {
  allowed: boolean;
  retryAfterSeconds: number;
}

interface Queue {
  scope: string;
  key: string;
  limit: number;
  windowSeconds: number;
  waiting: ((taken: Taken) => void)[];
  failed: ((error: unknown) => void)[];
}

/**
 * Windowed counts on the Broker (`take`), shared by the calls of one turn of the event
 * loop: the calls for one key that arrive together go to the Broker as one take of as
 * many, and the first ones get what it granted. Under load, a webhook or a run start
 * costs a fraction of a Broker call; alone, one call (pipelined with its neighbours on Redis).
 */
export function createRateTaker(broker: Broker) {
  const queues = new Map<string, Queue>();

  async function flush(id: string, queue: Queue): Promise<void> {
    queues.delete(id);
    try {
      const { granted, retryAfterSeconds } = await broker.take(
        queue.scope,
        queue.key,
        queue.limit,
        queue.windowSeconds,
        queue.waiting.length,
      );
      for (const [index, resolve] of queue.waiting.entries()) {
        resolve(index < granted ? { allowed: true, retryAfterSeconds: 0 } : { allowed: false, retryAfterSeconds });
      }
    } catch (error) {
      for (const reject of queue.failed) reject(error);
    }
  }

  return function take(scope: string, key: string, limit: number, windowSeconds: number): Promise<Taken> {
    const id = `${scope}\u0000${key}\u0000${limit}\u0000${windowSeconds}`;
    let queue = queues.get(id);
    if (!queue) {
      const created: Queue = { scope, key, limit, windowSeconds, waiting: [], failed: [] };
      queues.set(id, created);
      setImmediate(() => void flush(id, created));
      queue = created;
    }
    const joined = queue;
    return new Promise<Taken>((resolve, reject) => {
      joined.waiting.push(resolve);
      joined.failed.push(reject);
    });
  };
}
