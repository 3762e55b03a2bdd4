import { type DatabaseHandle, migrateToLatest, openDatabase } from "@platform/db";
import { createAuthCache } from "./accounts/auth-cache.ts";
import { createAuthenticator } from "./accounts/authenticate.ts";
import { createAccountsDeps } from "./accounts/deps.ts";
import { createBroker } from "./broker/index.ts";
import type { CoreConfig } from "./config.ts";
import { createRunEvents } from "./engine/events.ts";
import { createInPlaceRunner } from "./engine/in-place.ts";
import { createMcpTools } from "./engine/mcp-call/tools.ts";
import { createOutboundSlots } from "./engine/outbound-slots.ts";
import { createRunQueue } from "./engine/run-queue.ts";
import { createRegistry } from "./hub/registry/service.ts";
import { createAccountLimits } from "./limits/account-limits.ts";
import { loadPlanLimits } from "./limits/plans.ts";
import type { Logger } from "./logger.ts";
import { createMetricsRecorder } from "./monitoring/recorder.ts";
import { createRunsService } from "./runs/service.ts";
import { createSealer, loadSecretsKeys } from "./sealing.ts";
import type { Services } from "./services.ts";
import { createDefinitionCache } from "./storage/definition-cache.ts";

export interface ServicesHandle {
  services: Services;
  /** Writes pending metrics, stops listening for revocations, closes the broker, then the database. */
  close(): Promise<void>;
}

/**
 * Opens the configured database (PostgreSQL when DATABASE_URL is set, else PGlite in
 * DATA_DIR) and migrates it. With DATABASE_DIRECT_URL (DATABASE_URL being a transaction
 * pooler), migrations run on a connection of their own straight to the server: the
 * migrator's session advisory lock would not hold through a pooler.
 */
export async function openConfiguredDatabase(config: CoreConfig): Promise<DatabaseHandle> {
  if (!config.databaseUrl) {
    const database = await openDatabase({ kind: "pglite", dataDir: config.dataDir });
    return migrated(database, database);
  }
  const directUrl = config.databaseDirectUrl ?? config.databaseUrl;
  const database = await openDatabase({ kind: "postgres", url: config.databaseUrl, directUrl });
  if (directUrl === config.databaseUrl) return migrated(database, database);
  const direct = await openDatabase({ kind: "postgres", url: directUrl, poolSize: 1 }).catch(async (error) => {
    await database.close();
    throw error;
  });
  try {
    return await migrated(database, direct);
  } finally {
    await direct.close();
  }
}

/** `database`, once `through` (the same database) has brought its schema up to date; closed if that fails. */
async function migrated(database: DatabaseHandle, through: DatabaseHandle): Promise<DatabaseHandle> {
  try {
    await migrateToLatest(through.db);
  } catch (error) {
    await database.close();
    throw error;
  }
  return database;
}

/** Builds every service once, on an open and migrated database. */
export async function createServices(
  config: CoreConfig,
  logger: Logger,
  database: DatabaseHandle,
): Promise<ServicesHandle> {
  const sealer = createSealer(await loadSecretsKeys(config.secretsKey, config.dataDir));
  const plans = await loadPlanLimits(config.planLimitsFile);
  const broker = await createBroker({
    redisUrl: config.redisUrl,
    database,
    logger,
    namespace: config.brokerNamespace,
  });
  const authCache = createAuthCache({
    broker,
    logger: logger.child({ component: "auth-cache" }),
    ttlMs: config.auth.cacheTtlMs,
  });
  let accounts: Services["accounts"];
  let storageDefinitions: Services["storageDefinitions"];
  let registry: Services["registry"];
  try {
    accounts = await createAccountsDeps(
      config,
      database.db,
      broker,
      sealer,
      authCache,
      logger.child({ component: "accounts" }),
    );
    storageDefinitions = await createDefinitionCache(broker);
    registry = await createRegistry({
      db: database.db,
      broker,
      logger: logger.child({ component: "registry" }),
      config: config.registry,
    });
  } catch (error) {
    await authCache.close();
    await broker.close();
    throw error;
  }
  if (!config.auth.signingKeys && config.redisUrl) {
    logger.warn("JWT_SIGNING_KEYS is not set: using a key kept in DATA_DIR; set it when several API processes serve");
  }
  const authenticate = createAuthenticator(accounts);
  const metrics = createMetricsRecorder({ broker, logger: logger.child({ component: "metrics" }) });
  const limits = createAccountLimits({ db: database.db, broker, plans });
  const events = createRunEvents(database.db, limits);
  // Entries carry trigger data only on Redis (see `createRunQueue`).
  const runQueue = createRunQueue(broker, config.runs.queuePartitions, Boolean(config.redisUrl));
  const inPlace = config.runs.runsInPlace
    ? createInPlaceRunner({ db: database.db, sealer, limits, events, logger, storageDefinitions, config: config.runs })
    : undefined;
  const runs = createRunsService({
    inPlace,
    events,
    database,
    db: database.db,
    broker,
    runQueue,
    metrics,
    logger,
    limits,
    triggerMaxBytes: config.runs.triggerMaxBytes,
  });
  const services: Services = {
    config,
    logger,
    database,
    db: database.db,
    broker,
    metrics,
    authenticate,
    sealer,
    accounts,
    storageDefinitions,
    runQueue,
    runs,
    events,
    registry,
    limits,
    outbound: createOutboundSlots(),
    mcp: createMcpTools({ db: database.db, http: config.steps.http }),
  };
  return {
    services,
    async close() {
      await runs.close();
      limits.close();
      await metrics.close();
      accounts.mailer?.close();
      await storageDefinitions.close();
      await registry.close();
      await authCache.close();
      await broker.close();
      await database.close();
    },
  };
}
