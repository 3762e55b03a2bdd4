import {
  createLogger,
  createServices,
  messageOf,
  openConfiguredDatabase,
  type PeriodicJob,
  type Services,
  startTracing,
  startWorkerRuntime,
  type WorkerConsumer,
} from "@platform/core";
import type { WorkerConfig } from "./config.ts";
import { serveHealth } from "./health.ts";

export interface RunningWorker {
  /** The port GET /healthz answers on. */
  healthPort: number;
  /** Stops reading, lets in-flight entries finish (or releases them after the grace period), closes everything. */
  shutdown(reason: string): Promise<void>;
}

/**
 * One worker process: opens and migrates the database, builds the services (and with
 * them the broker), runs the consumers and periodic jobs, and serves its health check.
 */
export async function runWorkerProcess(
  config: WorkerConfig,
  consumers: (services: Services) => WorkerConsumer[],
  jobs: (services: Services) => PeriodicJob[] = () => [],
): Promise<RunningWorker> {
  const logger = createLogger({ level: config.core.logLevel, name: "worker" });
  const tracing = startTracing(config.tracing);
  const database = await openConfiguredDatabase(config.core);
  const { services, close } = await createServices(config.core, logger, database);
  const runtime = startWorkerRuntime({
    broker: services.broker,
    logger,
    consumers: consumers(services),
    jobs: jobs(services),
    concurrency: config.concurrency,
  });
  const health = serveHealth({ port: config.healthPort, runtime, broker: services.broker, database });
  logger.info(
    { healthPort: health.port, database: database.kind, broker: services.broker.kind, concurrency: config.concurrency },
    "worker running",
  );

  let stopped: Promise<void> | undefined;
  return {
    healthPort: health.port,
    shutdown(reason) {
      stopped ??= (async () => {
        logger.info({ reason, graceMs: config.shutdownGraceMs }, "shutting down: reading nothing more");
        await runtime.stop(config.shutdownGraceMs);
        await tracing.shutdown();
        await health.stop();
        await close();
        logger.info("stopped");
      })();
      return stopped;
    },
  };
}

/** Time allowed beyond the grace period for closing connections before the process exits anyway. */
const CLOSE_ALLOWANCE_MS = 5000;

/** SIGTERM or SIGINT: shut down gracefully and exit 0, or exit 1 if that fails or overruns its bound. */
export function exitOnSignals(worker: RunningWorker, config: WorkerConfig): void {
  const shutdown = (signal: string) => {
    setTimeout(() => process.exit(1), config.shutdownGraceMs + CLOSE_ALLOWANCE_MS).unref();
    worker.shutdown(signal).then(
      () => process.exit(0),
      (error: unknown) => {
        console.error(`worker shutdown failed: ${messageOf(error)}`);
        process.exit(1);
      },
    );
  };
  process.once("SIGTERM", () => shutdown("SIGTERM"));
  process.once("SIGINT", () => shutdown("SIGINT"));
}
