import type { Services } from "../services.ts";
import type { WorkerConsumer } from "./catalog.ts";

/**
 * Every stream consumer the platform runs, with its handler bound to the services.
 * apps/worker runs these, and so does apps/api in embedded mode. Flow runs, stream
 * triggers, registry sync and retention join here as they land.
 */
export function platformConsumers(_services: Services): WorkerConsumer[] {
  return [];
}
