import { checkpointIfDue, checkpointLimits } from "@platform/db";
import type { Services } from "../services.ts";
import type { PeriodicJob } from "../worker/periodic.ts";

/**
 * The checkpointer's work, for an embedded database (PGlite has none: see
 * packages/db/src/checkpoint.ts): every ten seconds it looks whether a checkpoint is due by
 * the server's own settings, which keeps the WAL within about `max_wal_size` and what a
 * restart after a crash replays within one checkpoint's interval.
 */
export function checkpointJob(services: Pick<Services, "db">, everyMs = 10_000): PeriodicJob {
  return {
    name: "checkpoint",
    everyMs,
    async run({ logger }) {
      const done = await checkpointIfDue(services.db, await checkpointLimits(services.db));
      if (done) logger.debug({ walBytes: done.walBytes, ms: Math.round(done.ms) }, "checkpoint made");
    },
  };
}
