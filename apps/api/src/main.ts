import {
  createLogger,
  createServices,
  messageOf,
  openConfiguredDatabase,
  platformConsumers,
  platformJobs,
  startTracing,
  startWorkerRuntime,
} from "@platform/core";
import { type ApiConfig, loadApiConfig, readRunMode } from "./config.ts";
import { startServer } from "./server.ts";

function loadConfigOrExit(): ApiConfig {
  try {
    return loadApiConfig(process.env, readRunMode(Bun.argv.slice(2)));
  } catch (error) {
    console.error(messageOf(error));
    process.exit(2);
  }
}

const config = loadConfigOrExit();
const logger = createLogger({ level: config.core.logLevel, name: "api" });
const tracing = startTracing(config.tracing);

/** Start-up failures (database unreachable, data directory in use) end in one line, not a stack. */
function exitOnStartupFailure(error: unknown): never {
  const reason = messageOf(error);
  logger.fatal({ err: error }, "start-up failed");
  console.error(`api failed to start: ${reason}`);
  process.exit(1);
}

const database = await openConfiguredDatabase(config.core).catch(exitOnStartupFailure);
const { services, close } = await createServices(config.core, logger, database).catch(async (error: unknown) => {
  await database.close();
  return exitOnStartupFailure(error);
});
// Embedded mode runs the worker here; in scale-out mode `start:worker` processes do.
const worker =
  config.mode === "embedded"
    ? startWorkerRuntime({
        broker: services.broker,
        logger: logger.child({ component: "worker" }),
        consumers: platformConsumers(services),
        jobs: platformJobs(services),
        concurrency: config.workerConcurrency,
      })
    : undefined;
const server = startServer(services, config);
logger.info(
  {
    url: server.url,
    publicUrl: config.core.publicUrl,
    mode: config.mode,
    worker: worker ? "in-process" : "separate",
    database: database.kind,
    broker: services.broker.kind,
  },
  "listening",
);

let stopping = false;
async function shutdown(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  const drained = server.stop(config.shutdownGraceMs);
  logger.info({ signal }, "shutting down: no new requests, finishing in-flight ones");
  await drained;
  await worker?.stop(config.shutdownGraceMs);
  await tracing.shutdown();
  await close();
  logger.info("stopped");
  process.exit(0);
}
process.on("SIGTERM", () => void shutdown("SIGTERM"));
process.on("SIGINT", () => void shutdown("SIGINT"));
