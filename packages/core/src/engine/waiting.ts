import { randomUUID } from "node:crypto";
import { type Broker, MAX_NOTIFICATION_BYTES, PLATFORM_SCOPE, type Unsubscribe } from "../broker/port.ts";

/** What the worker tells the waiting process when a run ends. */
export interface RunDone {
  id: string;
  status: "succeeded" | "failed";
  /** Absent when the outcome is too large for a notification: the waiter reads the run. */
  output?: unknown;
  response?: unknown;
  error?: string | null;
}

/** Each API process listens on a channel of its own. */
const channelOf = (waiter: string) => `run-done.${waiter}`;

/** Tells a waiting process that a run ended, with its outcome when that fits in a notification. */
export async function publishRunDone(broker: Broker, waiter: string, done: RunDone): Promise<void> {
  const full = JSON.stringify({
    id: done.id,
    status: done.status,
    output: done.output ?? null,
    response: done.response ?? null,
    error: done.error ?? null,
  });
  const message =
    Buffer.byteLength(full) <= MAX_NOTIFICATION_BYTES ? full : JSON.stringify({ id: done.id, status: done.status });
  await broker.publish(PLATFORM_SCOPE, channelOf(waiter), message);
}

/** One run waited for: `done` resolves with its ending, or null once the wait is let go first. */
export interface RunWait {
  done: Promise<RunDone | null>;
  /** Lets go of the wait (its time is up, or the answer came another way); nothing once `done` resolved. */
  letGo(): void;
}

/**
 * The runs this process waits for (wait mode). One subscription per process, opened on the
 * first wait; a wait registers before its run is queued, so no ending can be missed.
 */
export interface RunWaiters {
  /** The name workers notify: stored in the run's `waiter`. */
  readonly id: string;
  /** Waits for the run's ending until it is let go. Call `ready` before queueing the run. */
  wait(runId: string): RunWait;
  /** Resolves once the subscription is active. */
  ready(): Promise<void>;
  close(): Promise<void>;
}

export function createRunWaiters(broker: Broker): RunWaiters {
  const id = randomUUID();
  const waiting = new Map<string, (done: RunDone) => void>();
  let subscription: Promise<Unsubscribe> | undefined;

  const onMessage = (message: string) => {
    let done: RunDone;
    try {
      done = JSON.parse(message) as RunDone;
    } catch {
      return;
    }
    waiting.get(done.id)?.(done);
  };

  return {
    id,
    ready() {
      subscription ??= broker.subscribe(PLATFORM_SCOPE, channelOf(id), onMessage);
      // A failed subscription is not kept: the next wait tries again.
      subscription.catch(() => {
        subscription = undefined;
      });
      return subscription.then(() => undefined);
    },
    wait(runId) {
      let finish: (done: RunDone | null) => void = () => {};
      const done = new Promise<RunDone | null>((resolve) => {
        finish = (ending) => {
          waiting.delete(runId);
          resolve(ending);
        };
      });
      waiting.set(runId, finish);
      return { done, letGo: () => finish(null) };
    },
    async close() {
      const active = subscription;
      subscription = undefined;
      if (active === undefined) return;
      const unsubscribe = await active.catch(() => undefined);
      await unsubscribe?.();
    },
  };
}
