import { type Broker, PLATFORM_SCOPE, type Unsubscribe } from "./port.ts";

/** A platform channel this process listens to, or keeps trying to. */
export interface ChannelListener {
  /** Whether messages reach this process now: until then, nothing heard can be relied on. */
  listening(): boolean;
  close(): Promise<void>;
}

/**
 * Subscribes to a platform-wide channel. Resolves once the process listens, or once the
 * Broker refused: then it tries again every `retryMs` in the background.
 */
export async function listenToChannel(
  broker: Broker,
  channel: string,
  onMessage: (message: string) => void,
  retryMs: number,
): Promise<ChannelListener> {
  let unsubscribe: Unsubscribe | undefined;
  let retry: ReturnType<typeof setTimeout> | undefined;
  let closed = false;

  async function listen(): Promise<void> {
    try {
      const off = await broker.subscribe(PLATFORM_SCOPE, channel, onMessage);
      if (closed) await off();
      else unsubscribe = off;
    } catch {
      if (closed) return;
      retry = setTimeout(() => void listen(), retryMs);
      retry.unref?.();
    }
  }
  await listen();

  return {
    listening: () => unsubscribe !== undefined,
    async close() {
      closed = true;
      clearTimeout(retry);
      await unsubscribe?.();
    },
  };
}
