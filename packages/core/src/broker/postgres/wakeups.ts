import { createHash } from "node:crypto";
import type { DatabaseHandle, Unlisten } from "@platform/db";
import type { Logger } from "../../logger.ts";
import { deliverToEach } from "../deliver.ts";

/** A short, NOTIFY-safe name for a (scope, name) pair, whatever their length or characters. */
export function topicOf(scope: string, name: string): string {
  return createHash("sha1").update(scope).update("\0").update(name).digest("hex");
}

/**
 * Process-local fan-out of one PostgreSQL notification channel. Each payload is
 * `<topic>` or `<topic>:<message>`; handlers register per topic. One LISTEN per
 * channel per process, started on first use.
 */
export class TopicListener {
  private readonly handlers = new Map<string, Set<(message: string) => void>>();
  /** Called once on `close`: watchers waiting for a notice wake up (subscribers hear nothing). */
  private readonly closing = new Set<() => void>();
  private listening: Promise<Unlisten> | undefined;

  constructor(
    private readonly handle: DatabaseHandle,
    private readonly channel: string,
    private readonly logger?: Logger,
  ) {}

  /**
   * The one callback handed to the database, whatever the number of attempts: a handle
   * may keep a callback whose LISTEN failed and call it once it reconnects, so a new
   * callback per attempt would deliver each notice once per failed attempt.
   */
  private readonly onPayload = (payload: string) => this.dispatch(payload);

  /** Resolves once LISTEN is active. */
  async start(): Promise<void> {
    this.listening ??= this.handle.listen(this.channel, this.onPayload);
    try {
      await this.listening;
    } catch (error) {
      this.listening = undefined;
      throw error;
    }
  }

  on(topic: string, handler: (message: string) => void): () => void {
    let set = this.handlers.get(topic);
    if (!set) {
      set = new Set();
      this.handlers.set(topic, set);
    }
    set.add(handler);
    return () => {
      const current = this.handlers.get(topic);
      if (current?.delete(handler) && current.size === 0) this.handlers.delete(topic);
    };
  }

  /** Calls `callback` when the listener closes; returns a way to cancel that. */
  onClose(callback: () => void): () => void {
    this.closing.add(callback);
    return () => {
      this.closing.delete(callback);
    };
  }

  /** Runs handlers of `topic` in this process directly (a NOTIFY also arrives later). */
  dispatch(payload: string): void {
    const colon = payload.indexOf(":");
    const topic = colon < 0 ? payload : payload.slice(0, colon);
    const message = colon < 0 ? "" : payload.slice(colon + 1);
    deliverToEach(this.handlers.get(topic) ?? [], message, this.logger);
  }

  /** Stops listening; every watcher still waiting wakes up. */
  async close(): Promise<void> {
    const waiting = [...this.closing];
    this.closing.clear();
    this.handlers.clear();
    for (const wake of waiting) wake();
    const listening = this.listening;
    this.listening = undefined;
    await listening?.then((unlisten) => unlisten()).catch(() => {});
  }
}

/** Notices that arrived for one topic since the last `reset`, and a way to wait for the next one. */
export interface TopicWatch {
  reset(): void;
  /** Resolves at once when a notice arrived since `reset`, otherwise at the next notice or after `timeoutMs`. */
  wait(timeoutMs: number): Promise<void>;
  close(): void;
}

/**
 * Watches a topic. Register the watch before checking for work and `reset` it before
 * each check: a notice that lands between the check and `wait` is not lost.
 */
export function watchTopic(listener: TopicListener, topic: string): TopicWatch {
  let fired = false;
  let wake: (() => void) | undefined;
  const notice = () => {
    fired = true;
    wake?.();
  };
  const off = listener.on(topic, notice);
  const offClose = listener.onClose(notice);
  return {
    reset() {
      fired = false;
    },
    async wait(timeoutMs) {
      if (fired) return;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, timeoutMs);
        function done() {
          clearTimeout(timer);
          wake = undefined;
          resolve();
        }
        wake = done;
      });
    },
    close() {
      off();
      offClose();
      wake?.();
    },
  };
}
