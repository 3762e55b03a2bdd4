import type { RegistryConfig } from "../../config.ts";
import type { PeriodicJob } from "../../worker/periodic.ts";
import type { Registry } from "./service.ts";

/** How often the job looks whether a sync is due: an interrupted or failed one resumes this soon. */
const LOOK_EVERY_MS = 60_000;

/**
 * Keeps the registry mirror current: a sync when none has completed from the configured
 * upstream, when one was interrupted, or when the last completed `syncIntervalMs` ago.
 */
export function registrySyncJob(deps: { registry: Registry; config: RegistryConfig }): PeriodicJob {
  return {
    name: "hub-registry-sync",
    everyMs: Math.min(deps.config.syncIntervalMs, LOOK_EVERY_MS),
    async run({ signal, logger }) {
      if (!(await deps.registry.sync.due(deps.config.syncIntervalMs))) return;
      const outcome = await deps.registry.sync.run(signal);
      if (outcome === "busy") logger.debug("another process is syncing the registry mirror");
    },
  };
}
