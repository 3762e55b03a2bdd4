import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { Broker } from "../broker/port.ts";
import type { Logger } from "../logger.ts";
import { sleep } from "../sleep.ts";
import type { WorkerConsumer } from "./catalog.ts";
import { type ConsumerStats, emptyStats, GroupMember } from "./member.ts";
import { type PeriodicJob, runPeriodicJobs } from "./periodic.ts";

export interface WorkerRuntimeOptions {
  broker: Broker;
  logger: Logger;
  consumers: WorkerConsumer[];
  /** Jobs run on an interval, once per interval across every runtime of the deployment. */
  jobs?: PeriodicJob[];
  /** Longest wait between two looks at a periodic job's slot (default 5 s). */
  jobCheckMs?: number;
  /** Group members per consumer in this process, unless a consumer sets its own (default 1). */
  concurrency?: number;
  /** Names this process's members (`<instanceId>:<consumer>:<n>`); default host, pid and a random tag. */
  instanceId?: string;
  /** Longest blocking read; a stop is noticed within it (default 1000 ms). */
  pollMs?: number;
}

export interface WorkerRuntime {
  readonly instanceId: string;
  /** True from start until `stop` is called. */
  readonly running: boolean;
  /** Figures per consumer name. */
  stats(): Record<string, ConsumerStats>;
  /**
   * Stops reading at once, lets entries being handled finish for up to `graceMs`
   * (default 10 s), then aborts the handlers still running and releases their entries
   * to other workers. Entries a read brings in after the stop began are released right
   * away. Resolves when done; calling it again returns the same promise.
   */
  stop(graceMs?: number): Promise<void>;
}

/**
 * Starts the consumers of a catalog: `concurrency` members of each consumer's group in
 * this process; members in other processes share the same entries. Used by
 * apps/worker, and by apps/api in embedded mode.
 */
export function startWorkerRuntime(options: WorkerRuntimeOptions): WorkerRuntime {
  const instanceId = options.instanceId ?? `${hostname()}-${process.pid}-${randomBytes(3).toString("hex")}`;
  const logger = options.logger.child({ component: "worker", instanceId });
  const stopping = new AbortController();
  const stats: Record<string, ConsumerStats> = {};
  const members: GroupMember[] = [];

  const names = new Set<string>();
  for (const { definition } of options.consumers) {
    if (names.has(definition.name)) throw new Error(`two consumers are named ${definition.name}`);
    names.add(definition.name);
  }

  for (const { definition, handle } of options.consumers) {
    const consumerStats = emptyStats();
    stats[definition.name] = consumerStats;
    const count = definition.concurrency ?? options.concurrency ?? 1;
    for (let i = 0; i < count; i++) {
      members.push(
        new GroupMember({
          broker: options.broker,
          definition,
          handle,
          name: `${instanceId}:${definition.name}:${i}`,
          logger,
          stats: consumerStats,
          pollMs: options.pollMs ?? 1000,
          stopping: stopping.signal,
        }),
      );
    }
  }

  const loops = members.map((member) =>
    member.run().catch((error) => logger.error({ err: String(error) }, "consumer loop ended unexpectedly")),
  );
  const jobs = options.jobs ?? [];
  loops.push(
    runPeriodicJobs({
      broker: options.broker,
      logger,
      jobs,
      stopping: stopping.signal,
      checkEveryMs: options.jobCheckMs,
    }).catch((error) => logger.error({ err: String(error) }, "periodic jobs ended unexpectedly")),
  );
  logger.info(
    { consumers: [...names], members: members.length, jobs: jobs.map((job) => job.name) },
    "worker runtime started",
  );

  let stopped: Promise<void> | undefined;
  return {
    instanceId,
    get running() {
      return !stopping.signal.aborted;
    },
    stats: () => structuredClone(stats),
    stop(graceMs = 10_000) {
      stopped ??= (async () => {
        stopping.abort();
        const graceOver = new AbortController();
        const finished = Promise.all(loops).then(() => true);
        const inTime = await Promise.race([finished, sleep(graceMs, graceOver.signal).then(() => false)]);
        graceOver.abort();
        if (!inTime) {
          logger.warn({ graceMs }, "grace period over; releasing entries still in flight");
          await Promise.all(members.map((member) => member.abandon()));
        }
        for (const consumer of options.consumers) {
          await consumer
            .close?.()
            .catch((error: unknown) => logger.warn({ err: String(error) }, "consumer close failed"));
        }
        logger.info("worker runtime stopped");
      })();
      return stopped;
    },
  };
}
