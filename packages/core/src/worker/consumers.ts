import { runWorkerConsumer } from "../engine/consumer.ts";
import { runPartitionsJob, runRetentionJob, runStreamTrimJob, runWakerJob } from "../engine/housekeeping.ts";
import { runRecoveryJob } from "../engine/recovery.ts";
import { flowSchedulerJob } from "../flows/scheduler.ts";
import { checkpointJob } from "../housekeeping/checkpoint.ts";
import { housekeepingJob } from "../housekeeping/housekeeping.ts";
import { vacuumJob } from "../housekeeping/vacuum.ts";
import { registrySyncJob } from "../hub/registry/job.ts";
import { replayJobsJob } from "../runs/replays.ts";
import type { Services } from "../services.ts";
import { streamRetentionJob } from "../storage/streams/retention.ts";
import { deliveryWindowJob } from "../webhooks/ingress/dedup-window.ts";
import { queuesOf, type WorkerConsumer } from "./catalog.ts";
import type { PeriodicJob } from "./periodic.ts";

/**
 * Every stream consumer the platform runs, with its handler bound to the services.
 * apps/worker runs these, and so does apps/api in embedded mode.
 */
export function platformConsumers(services: Services): WorkerConsumer[] {
  return [runWorkerConsumer(services)];
}

/** Every periodic job the platform runs. */
export function platformJobs(services: Services): PeriodicJob[] {
  const groups = platformConsumers(services).flatMap(({ definition }) =>
    queuesOf(definition).map(({ scope, stream }) => ({ scope, stream, group: definition.name })),
  );
  return [
    streamRetentionJob(services),
    housekeepingJob({ db: services.db, broker: services.broker, groups }),
    runWakerJob(services),
    flowSchedulerJob(services),
    replayJobsJob(services),
    runPartitionsJob(services),
    runRetentionJob(services),
    deliveryWindowJob(services),
    registrySyncJob({ registry: services.registry, config: services.config.registry }),
    runStreamTrimJob(services),
    // The PostgreSQL broker keeps the run stream in the database with the runs: nothing to recover.
    ...(services.broker.kind === "redis" ? [runRecoveryJob(services)] : []),
    // A PostgreSQL server vacuums its own tables and makes its own checkpoints; PGlite has
    // neither autovacuum nor a checkpointer.
    ...(services.database.kind === "pglite" ? [vacuumJob(services), checkpointJob(services)] : []),
  ];
}
