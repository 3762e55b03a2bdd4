import { isRowFault } from "./database-errors.ts";

/**
 * Group commit: calls that arrive while earlier ones are being written share the next
 * statement. An idle writer writes at the end of the current turn of the event loop
 * (`setImmediate`, not a microtask: PGlite's statements block the loop, so a microtask
 * would send each request's call alone), so the calls of requests that arrived together go
 * together, and batching adds no timer when there is no load.
 */

/**
 * The in-flight limit for database writes on the hot paths: the next statement waits for
 * the one being written, so batches grow with the load and each commit (and its WAL flush)
 * serves more rows, at less of PostgreSQL's CPU per row than several smaller statements.
 */
export const ONE_STATEMENT_AT_A_TIME = 1;

export interface GroupCommitOptions<I> {
  /** Most items per statement. */
  maxBatch: number;
  /** Statements in flight at once (see ONE_STATEMENT_AT_A_TIME). */
  maxInFlight: number;
  /** Most summed `sizeOf` per statement, so a batch of large items stays a sane statement (one item may exceed it). */
  maxBytes?: number;
  sizeOf?: (item: I) => number;
  /**
   * Whether a failed statement failed because of some of its items rather than the backend
   * (default: PostgreSQL's data errors, `isRowFault`). Such a batch is written again in
   * halves, and so on, so that every other item is written and only the faulty ones fail.
   */
  isItemFault?: (error: unknown) => boolean;
  /** Called each time the last call queued has settled (so a keyed writer can forget its key). */
  onIdle?: () => void;
}

interface Waiting<I, O> {
  item: I;
  resolve(value: O): void;
  reject(error: unknown): void;
}

/**
 * Wraps `write`, which takes a batch and answers one result per item, in order, into a
 * function of one item. Calls of many accounts share a statement, so one call's bad value
 * must not fail the others: a statement that failed because of its items is split in two
 * and each half written again (bisection: one faulty item among n costs about 2·log2(n)
 * statements, where writing each item alone would cost n), until the faulty items fail
 * alone with their error. A statement that failed for another reason (the backend is down)
 * rejects every call of its batch at once, so that callers answer 503 without delay.
 */
export function groupCommit<I, O>(
  write: (items: I[]) => Promise<O[]>,
  options: GroupCommitOptions<I>,
): (item: I) => Promise<O> {
  const queue: Waiting<I, O>[] = [];
  let inFlight = 0;
  let scheduled = false;

  function takeBatch(): Waiting<I, O>[] {
    if (!options.maxBytes || !options.sizeOf) return queue.splice(0, options.maxBatch);
    let bytes = 0;
    let count = 0;
    while (count < queue.length && count < options.maxBatch) {
      bytes += options.sizeOf((queue[count] as Waiting<I, O>).item);
      if (count > 0 && bytes > options.maxBytes) break;
      count++;
    }
    return queue.splice(0, count);
  }

  const isItemFault = options.isItemFault ?? isRowFault;

  /** Writes a batch and settles its calls; the halves of a batch its items failed are written one after the other. */
  async function settle(batch: Waiting<I, O>[]): Promise<void> {
    let results: O[];
    try {
      results = await write(batch.map((waiting) => waiting.item));
    } catch (error) {
      if (batch.length > 1 && isItemFault(error)) {
        const half = Math.ceil(batch.length / 2);
        await settle(batch.slice(0, half));
        await settle(batch.slice(half));
        return;
      }
      for (const waiting of batch) waiting.reject(error);
      return;
    }
    for (const [i, waiting] of batch.entries()) waiting.resolve(results[i] as O);
  }

  function pump(): void {
    scheduled = false;
    while (queue.length > 0 && inFlight < options.maxInFlight) {
      const batch = takeBatch();
      inFlight++;
      void settle(batch).finally(() => {
        inFlight--;
        if (queue.length > 0 && !scheduled) schedule();
        else if (queue.length === 0 && inFlight === 0 && !scheduled) options.onIdle?.();
      });
    }
  }

  function schedule(): void {
    scheduled = true;
    setImmediate(pump);
  }

  return (item) =>
    new Promise<O>((resolve, reject) => {
      queue.push({ item, resolve, reject });
      if (!scheduled && inFlight < options.maxInFlight) schedule();
    });
}

/**
 * `groupCommit` per key: the calls of one key (one stream, one limiter) share statements, and
 * the `maxInFlight` limit is the key's, so the calls of one key never wait for another's. A
 * key's writer lives while it has calls queued or in flight; `write` gets the items of one key,
 * and the key.
 */
export function keyedGroupCommit<I, O>(
  keyOf: (item: I) => string,
  write: (items: I[], key: string) => Promise<O[]>,
  options: Omit<GroupCommitOptions<I>, "onIdle">,
): (item: I) => Promise<O> {
  const writers = new Map<string, (item: I) => Promise<O>>();
  return (item) => {
    const key = keyOf(item);
    let writer = writers.get(key);
    if (!writer) {
      writer = groupCommit((items: I[]) => write(items, key), { ...options, onIdle: () => writers.delete(key) });
      writers.set(key, writer);
    }
    return writer(item);
  };
}
