/**
 * A small pool of Bun Workers running evaluations, so user code never blocks the engine's
 * event loop. Each worker evaluates one task at a time and holds at most one more in its own
 * queue, so it never idles while this thread is busy elsewhere; other tasks wait here for a
 * worker. A worker whose running task overruns its deadline by `graceMs` (QuickJS polls its
 * interrupt handler only between bytecodes, so one huge native operation can outlast the
 * deadline) or that dies is terminated and replaced: that task fails, the one queued behind it
 * goes back to the front of the queue.
 */
import { type Outcome, timeLimitMessage } from "./evaluate.ts";
import type { Ready, Task, TaskResult, Warm } from "./protocol.ts";

/** Tasks a worker holds at once: the running one and the next. */
const WORKER_DEPTH = 2;

interface Pending {
  task: Task;
  resolve: (outcome: Outcome) => void;
}

interface Slot {
  worker: Worker;
  /** Loaded QuickJS: tasks (and their deadlines) start only then, not during start-up. */
  ready: boolean;
  /** Sent to the worker, in order; the first is running. */
  tasks: Pending[];
  /** The watchdog of the running task. */
  timer?: ReturnType<typeof setTimeout>;
  retired: boolean;
}

const WORKER_URL = new URL("./worker.ts", import.meta.url).href;

export class WorkerPool {
  private readonly slots: Slot[] = [];
  private readonly queue: Pending[] = [];
  private nextId = 1;
  private closed = false;

  constructor(
    size: number,
    private readonly memoryBytes: number,
    private readonly graceMs: number,
  ) {
    for (let index = 0; index < size; index++) this.slots.push(this.spawn());
  }

  run(task: Omit<Task, "id" | "kind">): Promise<Outcome> {
    if (this.closed) return Promise.resolve({ ok: false, message: "js: the sandbox is closed", retryable: true });
    return new Promise((resolve) => {
      this.queue.push({ task: { ...task, kind: "task", id: this.nextId++ }, resolve });
      this.pump();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    const closed: Outcome = { ok: false, message: "js: the sandbox is closed", retryable: true };
    for (const pending of this.queue.splice(0)) pending.resolve(closed);
    for (const slot of this.slots) {
      for (const pending of this.retire(slot)) pending.resolve(closed);
    }
  }

  private spawn(): Slot {
    const worker = new Worker(WORKER_URL, { ref: false });
    const slot: Slot = { worker, ready: false, tasks: [], retired: false };
    worker.addEventListener("message", (event: MessageEvent<TaskResult | Ready>) => {
      if (event.data.kind === "result") return this.finish(slot, event.data);
      slot.ready = true;
      this.pump();
    });
    worker.addEventListener("error", (event) => this.replace(slot, `js: the sandbox stopped (${event.message})`, true));
    worker.addEventListener("close", () => this.replace(slot, "js: the sandbox stopped", true));
    worker.postMessage({ kind: "warm", memoryBytes: this.memoryBytes } satisfies Warm);
    return slot;
  }

  /** Hands queued tasks out evenly: first one to every idle worker, then the next to each. */
  private pump(): void {
    for (let depth = 1; depth <= WORKER_DEPTH; depth++) {
      for (const slot of this.slots) {
        if (slot.retired || !slot.ready || slot.tasks.length >= depth) continue;
        const pending = this.queue.shift();
        if (!pending) return;
        slot.tasks.push(pending);
        slot.worker.postMessage(pending.task);
        if (slot.tasks.length === 1) this.watch(slot);
      }
    }
  }

  /** Starts the watchdog of the task the worker runs now (the first it holds). */
  private watch(slot: Slot): void {
    const running = slot.tasks[0];
    if (!running) return;
    const { timeoutMs } = running.task.limits;
    slot.timer = setTimeout(() => this.replace(slot, timeLimitMessage(timeoutMs), false), timeoutMs + this.graceMs);
  }

  private finish(slot: Slot, result: TaskResult): void {
    if (slot.tasks[0]?.task.id !== result.id) return;
    const pending = slot.tasks.shift() as Pending;
    clearTimeout(slot.timer);
    this.watch(slot);
    pending.resolve(result.outcome);
    this.pump();
  }

  /** Stops a worker; answers the tasks it held, the running one first. */
  private retire(slot: Slot): Pending[] {
    if (slot.retired) return [];
    slot.retired = true;
    clearTimeout(slot.timer);
    slot.worker.terminate();
    return slot.tasks.splice(0);
  }

  /** Stops a worker (overrun or died) and starts another: its running task fails, the next is queued again. */
  private replace(slot: Slot, message: string, retryable: boolean): void {
    if (slot.retired || this.closed) return;
    const [running, ...waiting] = this.retire(slot);
    this.queue.unshift(...waiting);
    running?.resolve({ ok: false, message, retryable });
    const index = this.slots.indexOf(slot);
    if (index >= 0) this.slots[index] = this.spawn();
    this.pump();
  }
}
