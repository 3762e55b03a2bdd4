import {
  coreConfigSchema,
  parseEnv,
  redisUrlSchema,
  secretsKeySchema,
  signingKeysSchema,
  toCoreConfig,
  tracingEnvSchema,
  tracingSettings,
  wholeNumber,
} from "@platform/core";
import { z } from "zod";

/**
 * The API's settings, read once at start-up. `--mode=embedded` (`bun run start`) runs
 * the worker in the same process and may use PGlite and the Postgres broker;
 * `--mode=scale-out` (`bun run start:api`) needs DATABASE_URL, REDIS_URL,
 * JWT_SIGNING_KEYS and SECRETS_KEY (shared by every API process).
 */
export const apiEnvSchema = coreConfigSchema.extend({
  PORT: wholeNumber({ min: 0, max: 65535, fallback: 3000, description: "Port the API listens on." }),
  HOST: z.string().min(1).default("0.0.0.0").meta({ description: "Interface the API binds to." }),
  MAX_BODY_BYTES: wholeNumber({
    min: 1,
    fallback: 10 * 1024 * 1024,
    description: "Largest request body accepted, in bytes (413 beyond).",
  }),
  SHUTDOWN_GRACE_MS: wholeNumber({
    min: 1,
    fallback: 10_000,
    description: "How long SIGTERM waits for in-flight requests before closing connections, in ms.",
  }),
  CONSOLE_DIR: z.string().min(1).optional().meta({
    description:
      "The web console's build, served at `/console` (default: apps/web/dist, written by `bun run build:web`).",
  }),
  TRUSTED_PROXY_HOPS: wholeNumber({
    min: 0,
    max: 10,
    fallback: 0,
    description:
      "Reverse proxies in front of the API whose X-Forwarded-For entries name the client (0: none, trust the socket).",
  }),
});

export type RunMode = "embedded" | "scale-out";

export type ApiConfig = ReturnType<typeof loadApiConfig>;

export function readRunMode(argv: string[]): RunMode {
  const flag = argv.find((arg) => arg.startsWith("--mode="));
  const mode = flag?.slice("--mode=".length) ?? "embedded";
  if (mode !== "embedded" && mode !== "scale-out") throw new Error(`invalid --mode: ${mode} (embedded or scale-out)`);
  return mode;
}

export function loadApiConfig(env: Record<string, string | undefined>, mode: RunMode) {
  const schema =
    mode === "scale-out"
      ? apiEnvSchema.extend({
          DATABASE_URL: z.url({ error: "is required in scale-out mode (a postgres:// URL)" }),
          REDIS_URL: redisUrlSchema("is required in scale-out mode (a redis:// or redis+cluster:// URL)"),
          // Every API process must sign and verify with the same keys.
          JWT_SIGNING_KEYS: signingKeysSchema,
          // ...and seal and open secrets with the same keys.
          SECRETS_KEY: secretsKeySchema,
        })
      : apiEnvSchema;
  // Unset, PUBLIC_URL follows PORT, so links, docs and passkey origins name this server.
  const port = env.PORT || "3000";
  const parsed = parseEnv(schema, { ...env, PUBLIC_URL: env.PUBLIC_URL || `http://localhost:${port}` });
  return {
    mode,
    core: toCoreConfig(parsed),
    port: parsed.PORT,
    host: parsed.HOST,
    maxBodyBytes: parsed.MAX_BODY_BYTES,
    shutdownGraceMs: parsed.SHUTDOWN_GRACE_MS,
    workerConcurrency: parsed.WORKER_CONCURRENCY,
    trustedProxyHops: parsed.TRUSTED_PROXY_HOPS,
    consoleDir: parsed.CONSOLE_DIR,
    tracing: tracingSettings(parseEnv(tracingEnvSchema, env), "platform-api"),
  };
}
