import { describe, expect, test } from "bun:test";
import type { DatabaseHandle } from "@platform/db";
import { TopicListener } from "./wakeups.ts";

/**
 * A handle whose LISTEN fails while "down" but keeps the callback it was given, as the
 * PostgreSQL handle does (it listens again for every callback it holds once it reconnects).
 */
function flakyHandle() {
  const callbacks = new Set<(payload: string) => void>();
  let down = true;
  const handle = {
    async listen(_channel: string, onPayload: (payload: string) => void) {
      callbacks.add(onPayload);
      if (down) throw Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });
      return async () => {
        callbacks.delete(onPayload);
      };
    },
  } as unknown as DatabaseHandle;
  return {
    handle,
    up: () => {
      down = false;
    },
    notify: (payload: string) => {
      for (const callback of callbacks) callback(payload);
    },
  };
}

describe("TopicListener", () => {
  test("listening again after a failed LISTEN does not deliver each notice twice", async () => {
    const backend = flakyHandle();
    const listener = new TopicListener(backend.handle, "channel");
    await expect(listener.start()).rejects.toThrow();
    await expect(listener.start()).rejects.toThrow();
    backend.up();
    await listener.start();

    const heard: string[] = [];
    listener.on("topic", (message) => heard.push(message));
    backend.notify("topic:once");
    expect(heard).toEqual(["once"]);
    await listener.close();
  });
});
