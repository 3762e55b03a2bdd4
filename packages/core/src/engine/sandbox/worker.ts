/**
 * A sandbox Worker thread: evaluates one task per message on its own QuickJS module (see
 * host.ts), so a long evaluation never blocks the engine's event loop.
 */
import type { Outcome } from "./evaluate.ts";
import { QuickJsHost } from "./host.ts";
import type { Ready, Task, TaskResult, Warm } from "./protocol.ts";

declare const self: Worker;

const host = new QuickJsHost();

self.onmessage = async (event: MessageEvent<Task | Warm>) => {
  const message = event.data;
  if (message.kind === "warm") {
    await host.warm(message.memoryBytes).catch(() => undefined);
    self.postMessage({ kind: "ready" } satisfies Ready);
    return;
  }
  let outcome: Outcome;
  try {
    outcome = await host.evaluate(message.code, message.input, message.limits);
  } catch (error) {
    outcome = { ok: false, message: `js: the sandbox failed (${String(error)})`, retryable: true };
  }
  self.postMessage({ kind: "result", id: message.id, outcome } satisfies TaskResult);
};
