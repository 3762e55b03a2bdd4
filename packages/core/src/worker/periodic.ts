import { type Broker, PLATFORM_SCOPE } from "../broker/port.ts";
import { messageOf } from "../errors.ts";
import type { Logger } from "../logger.ts";
import { sleep } from "../sleep.ts";

export interface PeriodicJobContext {
  /** Aborted when the runtime stops: finish or give up soon. */
  signal: AbortSignal;
  logger: Logger;
}

/**
 * Work that runs on an interval somewhere in the deployment (registry sync, housekeeping):
 * once per `everyMs` across every worker process, not once per process.
 */
export interface PeriodicJob {
  /** Unique among jobs; names the slot processes compete for. */
  name: string;
  everyMs: number;
  /**
   * Must be safe to run again after a crash half-way, and alongside a run elsewhere that
   * outlasted `everyMs`.
   */
  run(context: PeriodicJobContext): Promise<void>;
}

export interface PeriodicJobsOptions {
  broker: Broker;
  logger: Logger;
  jobs: PeriodicJob[];
  stopping: AbortSignal;
  /** Longest wait between two looks at a job's slot (default 5 s); also bounds how late a first run starts. */
  checkEveryMs?: number;
}

/**
 * Runs every job on its interval. Each process looks now and then at the job's slot, a
 * sliding-window limit of one run per `everyMs` in the Broker; the process that gets it
 * runs the job. A process that dies mid-run leaves the slot to whoever asks after the
 * window. Resolves when `stopping` aborts and the runs under way have ended.
 */
export async function runPeriodicJobs(options: PeriodicJobsOptions): Promise<void> {
  const { broker, jobs, stopping } = options;
  const names = new Set<string>();
  for (const job of jobs) {
    if (names.has(job.name)) throw new Error(`two periodic jobs are named ${job.name}`);
    names.add(job.name);
  }
  await Promise.all(
    jobs.map(async (job) => {
      const logger = options.logger.child({ job: job.name });
      const checkMs = Math.max(10, Math.min(options.checkEveryMs ?? 5000, job.everyMs));
      while (!stopping.aborted) {
        try {
          const slot = await broker.allow(PLATFORM_SCOPE, `periodic-job:${job.name}`, 1, job.everyMs / 1000);
          if (slot.allowed) {
            const started = performance.now();
            await job.run({ signal: stopping, logger });
            logger.debug({ ms: Math.round(performance.now() - started) }, "periodic job done");
          }
        } catch (error) {
          logger.warn({ err: messageOf(error) }, "periodic job failed");
        }
        // Jitter, so that processes started together do not ask at the same instant.
        await sleep(checkMs * (0.75 + Math.random() / 2), stopping);
      }
    }),
  );
}
