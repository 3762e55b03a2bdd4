import type { DatabaseHandle } from "@platform/db";
import type { Logger } from "../logger.ts";
import { namespaced } from "./namespace.ts";
import type { Broker } from "./port.ts";
import { createPostgresBroker } from "./postgres/index.ts";

export * from "./port.ts";

export interface CreateBrokerOptions {
  /** Redis Streams when set (scale-out); otherwise the PostgreSQL adapter on `database` (embedded). */
  redisUrl?: string;
  database: DatabaseHandle;
  logger?: Logger;
  /** Prefixes every scope (BROKER_NAMESPACE), so deployments or test runs can share one Redis. */
  namespace?: string;
}

/**
 * Builds the broker this process runs on. `close()` it before closing the database. The
 * Redis adapter is loaded only when it is the one: ioredis took 75 ms of an embedded start.
 */
export async function createBroker(options: CreateBrokerOptions): Promise<Broker> {
  const logger = options.logger?.child({ component: "broker" });
  const broker = options.redisUrl
    ? await (await import("./redis/index.ts")).createRedisBroker(options.redisUrl, logger)
    : await createPostgresBroker(options.database, logger);
  return namespaced(broker, options.namespace ?? "");
}
