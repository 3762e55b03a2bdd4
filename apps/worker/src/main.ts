import { messageOf, platformConsumers, platformJobs } from "@platform/core";
import { loadWorkerConfig, type WorkerConfig } from "./config.ts";
import { exitOnSignals, runWorkerProcess } from "./process.ts";

function loadConfigOrExit(): WorkerConfig {
  try {
    return loadWorkerConfig(process.env);
  } catch (error) {
    console.error(messageOf(error));
    process.exit(2);
  }
}

const config = loadConfigOrExit();
const worker = await runWorkerProcess(config, platformConsumers, platformJobs).catch((error: unknown) => {
  console.error(`worker failed to start: ${messageOf(error)}`);
  process.exit(1);
});
exitOnSignals(worker, config);
