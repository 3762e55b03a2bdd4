import type { Services } from "../services.ts";
import type { WorkerConsumer } from "./catalog.ts";
import type { PeriodicJob } from "./periodic.ts";

/**
 * Every stream consumer the platform runs, with its handler bound to the services.
 * apps/worker runs these, and so does apps/api in embedded mode. Flow runs, stream
 * triggers, registry sync and retention join here as they land.
 */
export function platformConsumers(_services: Services): WorkerConsumer[] {
  return [];
}

/** Every periodic job the platform runs (registry sync, housekeeping join here as they land). */
export function platformJobs(_services: Services): PeriodicJob[] {
  return [];
}
