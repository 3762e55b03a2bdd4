import {
  coreConfigSchema,
  parseEnv,
  redisUrlSchema,
  toCoreConfig,
  tracingEnvSchema,
  tracingSettings,
  wholeNumber,
} from "@platform/core";
import { z } from "zod";

/**
 * The worker's settings, read once at start-up. The standalone worker is the scale-out
 * one: it needs PostgreSQL and Redis, so it can never open (and corrupt) the PGlite
 * directory of an embedded API, which runs its own worker in-process.
 */
export const workerEnvSchema = coreConfigSchema.extend({
  DATABASE_URL: z.url({
    error: "is required by start:worker (a postgres:// URL; embedded mode runs its worker in the API)",
  }),
  REDIS_URL: redisUrlSchema("is required by start:worker (a redis:// or redis+cluster:// URL)"),
  WORKER_HEALTH_PORT: wholeNumber({
    min: 0,
    max: 65535,
    fallback: 3001,
    description: "Port of GET /healthz (0: any free port, logged at start).",
  }),
  WORKER_SHUTDOWN_GRACE_MS: wholeNumber({
    min: 1,
    fallback: 10_000,
    description: "How long SIGTERM lets entries in flight finish before releasing them to other workers, in ms.",
  }),
});

/** Parses the environment; throws a ConfigError whose message is one line naming each bad variable. */
export function loadWorkerConfig(env: Record<string, string | undefined>) {
  const parsed = parseEnv(workerEnvSchema, env);
  return {
    core: toCoreConfig(parsed),
    concurrency: parsed.WORKER_CONCURRENCY,
    healthPort: parsed.WORKER_HEALTH_PORT,
    shutdownGraceMs: parsed.WORKER_SHUTDOWN_GRACE_MS,
    tracing: tracingSettings(parseEnv(tracingEnvSchema, env), "platform-worker"),
  };
}

export type WorkerConfig = ReturnType<typeof loadWorkerConfig>;
