import { type CoreConfig, coreConfigSchema, parseEnv, toCoreConfig } from "@platform/core";
import { z } from "zod";

/**
 * The worker's settings, read once at start-up. With DATABASE_URL unset it opens PGlite
 * in DATA_DIR (only one process may use a data directory); with REDIS_URL unset the
 * broker runs on that database.
 */
const workerEnvSchema = coreConfigSchema.extend({
  /** Group members per consumer in this process. */
  WORKER_CONCURRENCY: z.coerce.number().int().min(1).max(256).default(4),
  /** Port of GET /healthz (0: any free port, logged at start). */
  WORKER_HEALTH_PORT: z.coerce.number().int().min(0).max(65535).default(3001),
  /** How long SIGTERM lets entries in flight finish before releasing them to other workers, in ms. */
  WORKER_SHUTDOWN_GRACE_MS: z.coerce.number().int().positive().default(10_000),
});

export interface WorkerConfig {
  core: CoreConfig;
  concurrency: number;
  healthPort: number;
  shutdownGraceMs: number;
}

/** Parses the environment; throws a ConfigError whose message is one line naming each bad variable. */
export function loadWorkerConfig(env: Record<string, string | undefined>): WorkerConfig {
  const parsed = parseEnv(workerEnvSchema, env);
  return {
    core: toCoreConfig(parsed),
    concurrency: parsed.WORKER_CONCURRENCY,
    healthPort: parsed.WORKER_HEALTH_PORT,
    shutdownGraceMs: parsed.WORKER_SHUTDOWN_GRACE_MS,
  };
}
