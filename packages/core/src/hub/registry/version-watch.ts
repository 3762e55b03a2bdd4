import { listenToChannel } from "../../broker/listener.ts";
import { type Broker, PLATFORM_SCOPE } from "../../broker/port.ts";

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
  const drop = () => {
    known = undefined;
    changes += 1;
  };
  const listener = await listenToChannel(options.broker, CHANNEL, drop, retryMs);

  return {
    async current() {
      if (known && listener.listening() && known.expires > performance.now()) return known.version;
      const before = changes;
      const version = await options.read();
      if (changes === before) known = { version, expires: performance.now() + ttlMs };
      return version;
    },
    async changed() {
      drop();
      await options.broker.publish(PLATFORM_SCOPE, CHANNEL, "changed").catch(() => undefined);
    },
    close: () => listener.close(),
  };
}
