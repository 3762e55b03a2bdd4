import type { Services } from "../services.ts";

/**
 * What the storage services work with: stream and bucket definitions in the database (and
 * kept in each process), contents in the Broker.
 */
export type StorageDeps = Pick<Services, "db" | "broker" | "metrics" | "storageDefinitions" | "limits">;
