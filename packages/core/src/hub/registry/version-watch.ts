import { type Broker, PLATFORM_SCOPE, type Unsubscribe } from "../../broker/port.ts";

/** Where a sync announces that it changed the mirror, to every process. */
const CHANNEL = "hub.registry.changed";

export interface MirrorVersion {
  /** Whether a sync from the configured upstream has completed. */
  completed: boolean;
  /** Bumped by every change to the mirror's rows. */
  generation: number;
}

/**
 * The mirror's version as this process knows it, so that a request costs no database
 * round trip for it: kept for at most `ttlMs`, and dropped as soon as any process
 * announces a change (a read under way when one is heard is not kept). Until the
 * process listens (the Broker refused at start-up), every call reads the database.
 */
export interface MirrorVersionWatch {
  current(): Promise<MirrorVersion>;
  /** Drops the copy here and in every other process; call once the change is committed. */
  changed(): Promise<void>;
  close(): Promise<void>;
}

export async function watchMirrorVersion(options: {
  broker: Broker;
  read: () => Promise<MirrorVersion>;
  /** How stale a process may be when an announcement is lost (default 1 s). */
  ttlMs?: number;
  retryMs?: number;
}): Promise<MirrorVersionWatch> {
  const ttlMs = options.ttlMs ?? 1000;
  const retryMs = options.retryMs ?? 1000;
  let known: { version: MirrorVersion; expires: number } | undefined;
  let changes = 0;
  let unsubscribe: Unsubscribe | undefined;
  let retry: ReturnType<typeof setTimeout> | undefined;
  let closed = false;

  const drop = () => {
    known = undefined;
    changes += 1;
  };
  async function listen(): Promise<void> {
    try {
      const off = await options.broker.subscribe(PLATFORM_SCOPE, CHANNEL, drop);
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
    async current() {
      if (known && unsubscribe && known.expires > performance.now()) return known.version;
      const before = changes;
      const version = await options.read();
      if (changes === before) known = { version, expires: performance.now() + ttlMs };
      return version;
    },
    async changed() {
      drop();
      await options.broker.publish(PLATFORM_SCOPE, CHANNEL, "changed").catch(() => undefined);
    },
    async close() {
      closed = true;
      clearTimeout(retry);
      await unsubscribe?.();
    },
  };
}
