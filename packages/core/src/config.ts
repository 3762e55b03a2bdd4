import { z } from "zod";
import { parseRedisAddress } from "./broker/redis/address.ts";
import { parseNetwork } from "./engine/safe-http/addresses.ts";
import { parseSecretsKeys } from "./sealing.ts";
import "./zod-messages.ts";

/** `true`/`1` or `false`/`0`; anything else is refused rather than guessed. */
export const envBoolean = (fallback: boolean) =>
  z
    .enum(["true", "false", "1", "0"], { error: "must be true or false" })
    .default(fallback ? "true" : "false")
    .transform((value) => value === "true" || value === "1");

/** A whole number read from the environment, at least `min` (and at most `max`), with its default and what it sets. */
export function wholeNumber(setting: { min: number; max?: number; fallback: number; description: string }) {
  const atLeast = z.coerce.number().int().min(setting.min);
  const bounded = setting.max === undefined ? atLeast : atLeast.max(setting.max);
  return bounded.default(setting.fallback).meta({ description: setting.description });
}

/** Comma-separated IP addresses or CIDR networks (`10.1.2.3,10.8.0.0/16,fd00::/8`); empty counts as none. */
const networkList = z
  .string()
  .default("")
  .transform((text, ctx) => {
    const entries = text
      .split(",")
      .map((entry) => entry.trim())
      .filter(Boolean);
    for (const entry of entries) {
      try {
        parseNetwork(entry);
      } catch (error) {
        ctx.addIssue({ code: "custom", message: (error as Error).message });
      }
    }
    return entries;
  });

/** An empty variable (`DATABASE_URL=`) counts as unset. */
const optionalUrl = z.preprocess((value) => (value === "" ? undefined : value), z.url().optional());

/** Where the broker's Redis is: `redis://`/`rediss://` for one server, `redis+cluster://host:port,...` for a cluster. */
export const redisUrlSchema = (error: string) =>
  z.string({ error }).superRefine((url, ctx) => {
    try {
      parseRedisAddress(url);
    } catch (problem) {
      ctx.addIssue({ code: "custom", message: (problem as Error).message });
    }
  });

const optionalRedisUrl = z.preprocess(
  (value) => (value === "" ? undefined : value),
  redisUrlSchema("must be a redis://, rediss:// or redis+cluster:// URL").optional(),
);

/**
 * HS256 keys for access tokens: `kid:secret[,kid:secret...]`, secrets base64url of at
 * least 32 bytes. The first signs; the others still verify (rotation).
 */
export const signingKeysSchema = z
  .string({ error: "is required: kid:secret[,kid:secret...]" })
  .regex(/^[\w.-]{1,64}:[\w-]{43,}(,[\w.-]{1,64}:[\w-]{43,})*$/, {
    error: "must be kid:secret[,kid:secret...] with base64url secrets of at least 32 bytes",
  });

/**
 * Keys sealing secrets at rest (AES-256-GCM), each 32 bytes base64url (43 characters):
 * one key, or `kid:key[,kid:key...]` (a bare key in the list is named by a hash of it).
 * The first seals; all of them open (rotation).
 */
export const secretsKeySchema = z
  .string({ error: "is required: 32 random bytes, base64url, or kid:key[,kid:key...]" })
  .regex(/^(?:[\w-]{1,32}:)?[\w-]{43}(?:,(?:[\w-]{1,32}:)?[\w-]{43})*$/, {
    error: "must be a 32-byte base64url key (43 characters) or kid:key[,kid:key...]",
    abort: true,
  })
  .refine(
    (text) => {
      try {
        return parseSecretsKeys(text) !== undefined;
      } catch {
        return false;
      }
    },
    { error: "lists a key id twice" },
  );

/**
 * Settings core needs, parsed by each app's config module from its environment.
 * Every one has a default that is safe for embedded mode.
 */
export const coreConfigSchema = z.object({
  PUBLIC_URL: z
    .url()
    .default("http://localhost:3000")
    .meta({ description: "The API's public address ({base_url}); links in responses are built from it." }),
  INGRESS_URL: optionalUrl.meta({
    description:
      "The public address of webhooks and gateways when they are served from a host of their own (`https://hooks.example.com`), apart from the API and the web app: the default base of WEBHOOK_BASE_URL and GATEWAY_BASE_URL instead of PUBLIC_URL.",
  }),
  WEBHOOK_BASE_URL: optionalUrl.meta({
    description: "{webhook_url}; defaults to INGRESS_URL (or PUBLIC_URL) + /webhooks.",
  }),
  GATEWAY_BASE_URL: optionalUrl.meta({
    description:
      "Gateways' public base; a gateway's url is this + /<topic>. Defaults to INGRESS_URL (or PUBLIC_URL) + /gw.",
  }),
  DATA_DIR: z
    .string()
    .min(1)
    .default("./data")
    .meta({ description: "Where embedded mode keeps its data (PGlite files, generated keys)." }),
  DATABASE_URL: optionalUrl.meta({
    description:
      "PostgreSQL connection URL. Unset: embedded PGlite in DATA_DIR. Required by start:api and start:worker.",
  }),
  DATABASE_DIRECT_URL: optionalUrl.meta({
    description:
      "When DATABASE_URL is a transaction-pooling PgBouncer: the same database straight on the server, for what needs a session of its own (migrations' lock, LISTEN). Unset: DATABASE_URL.",
  }),
  REDIS_URL: optionalRedisUrl.meta({
    description:
      "Redis connection URL: redis://host:6379 for one server, redis+cluster://host1:6379,host2:6379 for a Redis Cluster (any reachable nodes; the rest are found). Unset: the broker runs on the database. Required by start:api and start:worker.",
  }),
  BROKER_NAMESPACE: z
    .string()
    .regex(/^[\w.-]{0,64}$/, { error: "may hold letters, digits, '_', '.' and '-' (at most 64)" })
    .default("")
    .meta({ description: "Prefix of every broker scope, so deployments (or test runs) sharing one Redis never meet." }),
  WORKER_CONCURRENCY: wholeNumber({
    min: 1,
    max: 256,
    fallback: 4,
    description: "Stream entries processed at once by each worker process (and by the embedded worker).",
  }),
  LOG_LEVEL: z
    .enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"])
    .default("info")
    .meta({ description: "fatal, error, warn, info, debug, trace or silent." }),
  ACCESS_TOKEN_TTL_SECONDS: wholeNumber({
    min: 10,
    max: 86_400,
    fallback: 900,
    description: "Lifetime of an access token (JWT), in seconds.",
  }),
  REFRESH_TOKEN_TTL_SECONDS: wholeNumber({
    min: 60,
    fallback: 30 * 86_400,
    description: "Lifetime of a refresh token, in seconds; each refresh issues a new one.",
  }),
  REFRESH_REUSE_GRACE_S: wholeNumber({
    min: 0,
    max: 300,
    fallback: 10,
    description:
      "Seconds after a refresh token was exchanged during which presenting it again (two tabs refreshing at once) gets new tokens of the same session instead of revoking it; 0: never.",
  }),
  RECENT_AUTH_SECONDS: wholeNumber({
    min: 30,
    max: 86_400,
    fallback: 600,
    description: "How recent a sign-in (or re-authentication) must be to change second factors, in seconds.",
  }),
  MFA_TOKEN_TTL_SECONDS: wholeNumber({
    min: 30,
    max: 3600,
    fallback: 300,
    description: "How long an MFA token from a password login waits for its second factor, in seconds.",
  }),
  JWT_SIGNING_KEYS: signingKeysSchema.optional().meta({
    description:
      "Access-token signing keys (see signingKeysSchema). When unset, one key is generated once into DATA_DIR (mode 0600).",
  }),
  SECRETS_KEY: secretsKeySchema.optional().meta({
    description:
      "Seals secrets kept in the database (see secretsKeySchema). When unset, one key is generated once into DATA_DIR (mode 0600).",
  }),
  WEBAUTHN_RP_ID: z
    .string()
    .min(1)
    .optional()
    .meta({ description: "WebAuthn relying party id; defaults to PUBLIC_URL's host name." }),
  WEBAUTHN_RP_NAME: z
    .string()
    .min(1)
    .default("Workflow Platform")
    .meta({ description: "WebAuthn relying party name shown by authenticators." }),
  WEBAUTHN_ORIGINS: z
    .string()
    .min(1)
    .optional()
    .meta({ description: "Origins allowed in WebAuthn responses, comma-separated; defaults to PUBLIC_URL's origin." }),
  PRICES_FILE: z.string().min(1).optional().meta({
    description: "A JSON file holding the price catalog (an array of Price objects); built-in defaults when unset.",
  }),
  PLAN_LIMITS_FILE: z.string().min(1).optional().meta({
    description:
      'A JSON file of per-plan limits (`{"free": {"kv_bytes": 104857600}}`, over the defaults); defaults for every plan when unset.',
  }),
  PASSWORD_HASH_MEMORY_KIB: wholeNumber({
    min: 19_456,
    fallback: 65_536,
    description:
      "Memory of each argon2id password hash, in KiB (default 64 MiB; at least 19 MiB, OWASP's floor). Existing hashes keep the cost they were made with; a sign-in checks them as made.",
  }),
  PASSWORD_HASH_TIME_COST: wholeNumber({
    min: 2,
    max: 10,
    fallback: 2,
    description: "Passes of each argon2id password hash over its memory (2-10, default 2).",
  }),
  LOGIN_FAILURES_PER_PAIR: wholeNumber({
    min: 1,
    fallback: 10,
    description: "Failed sign-ins (or second factors) of one email from one client address before that pair gets 429.",
  }),
  LOGIN_FAILURES_PER_IP: wholeNumber({
    min: 1,
    fallback: 50,
    description:
      "Failed sign-ins from one client address, over all emails, before the address gets 429 (also: sign-ups per address).",
  }),
  LOGIN_FAILURES_PER_EMAIL: wholeNumber({
    min: 1,
    fallback: 20,
    description:
      "Failed sign-ins of one email, from anywhere, after which its sign-ins are slowed down (never refused).",
  }),
  LOGIN_SLOWDOWN_MS: wholeNumber({
    min: 0,
    max: 60_000,
    fallback: 1000,
    description: "How long each sign-in of such an email waits, in ms (0: no slowdown).",
  }),
  LOGIN_FAILURE_WINDOW_SECONDS: wholeNumber({
    min: 1,
    fallback: 900,
    description: "The window of the failure counts above, from the first failure, in seconds.",
  }),
  SMTP_URL: z
    .preprocess(
      (value) => (value === "" ? undefined : value),
      z
        .string()
        .regex(/^smtps?:\/\/[^\s]+$/, { error: "must be an smtp:// or smtps:// URL" })
        .optional(),
    )
    .meta({
      description:
        "An SMTP server for invitations and password resets (`smtp://user:pass@host:587`, `smtps://...`); unset: no mail is sent.",
    }),
  MAIL_FROM: z.string().min(3).optional().meta({
    description:
      "The sender of those mails, e.g. `Workflow Platform <no-reply@example.com>`; default: no-reply at PUBLIC_URL's host.",
  }),
  APP_URL: optionalUrl.meta({
    description: "Where links in mails point (invitations, password resets); default: PUBLIC_URL.",
  }),
  INVITATION_TTL_SECONDS: wholeNumber({
    min: 60,
    fallback: 7 * 86_400,
    description: "How long an invitation can be accepted, in seconds (default 7 days).",
  }),
  PASSWORD_RESET_TTL_SECONDS: wholeNumber({
    min: 60,
    max: 86_400,
    fallback: 3600,
    description: "How long a password reset link works, in seconds (default 1 hour).",
  }),
  AUTH_CACHE_TTL_MS: wholeNumber({
    min: 0,
    max: 300_000,
    fallback: 10_000,
    description:
      "How long a process trusts a verified session or API key without asking the database, in ms; revocations reach every process at once through the Broker, so this only bounds the case where one could not be announced. 0 turns the cache off.",
  }),
  METRICS_REQUIRE_AUTH: envBoolean(false).meta({
    description: "The spec states the metrics request without a credential; `true` makes one required.",
  }),
  WAIT_TIMEOUT_MS: wholeNumber({
    min: 1,
    max: 3_600_000,
    fallback: 30_000,
    description:
      "How long wait mode (`?wait=true`, webhooks and gateways that wait) waits for a run's end before answering 202, in ms. A request that waits keeps its connection open that long, silent, past the HTTP server's 10 s idle timeout for other connections.",
  }),
  RUNS_IN_PLACE: envBoolean(true).meta({
    description:
      "Whether a run of a flow that only computes (transform, respond, stop, and switch, for_each and parallel of them; no flow control; at most 500 steps executed, for-each items counted, for at most a second) runs in the API process that accepted it, executed first and recorded as it ended in one INSERT, without the queue and the worker's claim: a wait-mode start answers at once, and a start no one waits for (a webhook acknowledged, a start by hand without `wait`) is acknowledged once its run has ended. `false` queues every run for the workers. Named WAIT_RUNS_IN_PLACE before it covered every start; a process given that name refuses to start.",
  }),
  RUN_RETENTION_DAYS: wholeNumber({
    min: 1,
    max: 36_500,
    fallback: 30,
    description:
      "Days a run's record is kept after it was accepted; the worker drops older ones a day at a time (a day's partition, once none of its runs is still live). An account may choose fewer (`PUT /accounts/settings`), never more.",
  }),
  RUN_LEASE_MS: wholeNumber({
    min: 1000,
    max: 600_000,
    fallback: 30_000,
    description:
      "How long a worker's hold on a run lasts without renewal, in ms (renewed every third of it). After Redis lost its data, a run held this long without renewal is taken from its dead worker and queued again. Every process of a deployment must use the same value.",
  }),
  RUN_QUEUE_PARTITIONS: wholeNumber({
    min: 1,
    max: 256,
    fallback: 1,
    description:
      "Streams the run queue is split into, each in a cluster slot of its own; a flow's runs stay on one, placed by a consistent hash. 1 suits one Redis (or the database); 16 a Redis Cluster. Every process of a deployment must use the same value. Raising it from n moves about 1/(n+1) of the flows to the new partitions: while runs a moved flow queued before the change are still waiting, its runs are taken from both partitions, not strictly in order. Lower it only with the queue drained.",
  }),
  STEP_OUTPUT_MAX_BYTES: wholeNumber({
    min: 1024,
    fallback: 1024 * 1024,
    description: "Largest output a step may answer, in bytes of JSON; a larger one fails the step.",
  }),
  FOR_EACH_MAX_ITEMS: wholeNumber({
    min: 1,
    max: 100_000,
    fallback: 10_000,
    description: "Most items a for_each step may iterate; a longer array fails the step.",
  }),
  FLOW_CALL_MAX_DEPTH: wholeNumber({
    min: 1,
    max: 100,
    fallback: 10,
    description: "How deep flow.call steps may nest (a flow calling a flow calling ...); a deeper call fails its step.",
  }),
  TRIGGER_MAX_BYTES: wholeNumber({
    min: 1024,
    fallback: 10 * 1024 * 1024,
    description: "Largest trigger data a run may start with, in bytes of JSON (413 beyond), however the run starts.",
  }),
  WEBHOOK_MAX_BYTES: wholeNumber({
    min: 1,
    fallback: 10 * 1024 * 1024,
    description: "Largest webhook body accepted, in bytes (413 beyond); read no further than that.",
  }),
  WEBHOOK_MAX_FILE_CONTENT_BYTES: wholeNumber({
    min: 0,
    fallback: 1024 * 1024,
    description:
      "Largest file in a multipart webhook whose content (base64) is kept in the trigger data; larger ones keep their hash.",
  }),
  ALLOW_PRIVATE_NETWORK: envBoolean(false).meta({
    description:
      "`true` lets http.request and mcp.call steps reach private, loopback, link-local and metadata addresses (a trusted network only).",
  }),
  HTTP_REQUEST_ALLOWED_NETWORKS: networkList.meta({
    description:
      "Private addresses or networks http.request and mcp.call steps may reach even so (one internal service, say).",
  }),
  HTTP_REQUEST_MAX_RESPONSE_BYTES: wholeNumber({
    min: 1,
    fallback: 10 * 1024 * 1024,
    description:
      "Largest response body an http.request step (or an answer an mcp.call step) reads, in bytes; a larger one fails the step.",
  }),
  JS_MEMORY_LIMIT_MB: wholeNumber({
    min: 8,
    max: 2048,
    fallback: 64,
    description: "Heap of one js step evaluation, in MiB.",
  }),
  JS_TIME_LIMIT_MS: wholeNumber({
    min: 10,
    max: 300_000,
    fallback: 1000,
    description: "Longest one js step evaluation may run, in ms.",
  }),
  JS_WORKERS: wholeNumber({
    min: 1,
    max: 64,
    fallback: 2,
    description: "Worker threads per process evaluating js steps side by side.",
  }),
  STEP_LOG_MAX_LINES: wholeNumber({
    min: 0,
    max: 10_000,
    fallback: 100,
    description:
      "Console lines a js step attempt keeps; the rest are counted in a last line saying how many were dropped.",
  }),
  STEP_LOG_MAX_BYTES: wholeNumber({
    min: 0,
    max: 1024 * 1024,
    fallback: 16 * 1024,
    description:
      "Bytes of console lines a js step attempt keeps (UTF-8, after redaction); a line past them is cut, later ones dropped.",
  }),
  RUN_LOG_MAX_BYTES: wholeNumber({
    min: 0,
    max: 16 * 1024 * 1024,
    fallback: 64 * 1024,
    description:
      "Bytes of console lines one run keeps, all steps and attempts together; they count against the plan's run_record_bytes too.",
  }),
  MCP_REGISTRY_URL: z
    .url()
    .default("https://registry.modelcontextprotocol.io")
    .meta({ description: "The public MCP registry the hub mirrors (its read API, `/v0.1/servers`)." }),
  MCP_REGISTRY_SYNC_INTERVAL_S: wholeNumber({
    min: 1,
    fallback: 3600,
    description: "Seconds between incremental syncs of the registry mirror (across every worker).",
  }),
  MCP_REGISTRY_TIMEOUT_MS: wholeNumber({
    min: 100,
    max: 300_000,
    fallback: 10_000,
    description: "How long one request to the upstream registry may take, in ms.",
  }),
  MCP_REGISTRY_CACHE_MB: wholeNumber({
    min: 0,
    max: 4096,
    fallback: 32,
    description: "Registry answers each process keeps until the mirror changes, in MiB (0: none).",
  }),
});

export type CoreEnv = z.infer<typeof coreConfigSchema>;

const withoutTrailingSlash = (url: string) => url.replace(/\/+$/, "");

/**
 * The settings as the services take them, shaped from the environment: the only place a
 * variable becomes a setting (its description is the schema's), so the types follow from it.
 */
export function toCoreConfig(env: CoreEnv) {
  const publicUrl = withoutTrailingSlash(env.PUBLIC_URL);
  const ingressUrl = env.INGRESS_URL ? withoutTrailingSlash(env.INGRESS_URL) : publicUrl;
  return {
    publicUrl,
    webhookBaseUrl: withoutTrailingSlash(env.WEBHOOK_BASE_URL ?? `${ingressUrl}/webhooks`),
    gatewayBaseUrl: withoutTrailingSlash(env.GATEWAY_BASE_URL ?? `${ingressUrl}/gw`),
    dataDir: env.DATA_DIR,
    databaseUrl: env.DATABASE_URL,
    databaseDirectUrl: env.DATABASE_DIRECT_URL,
    redisUrl: env.REDIS_URL,
    brokerNamespace: env.BROKER_NAMESPACE,
    secretsKey: env.SECRETS_KEY,
    logLevel: env.LOG_LEVEL,
    metricsRequireAuth: env.METRICS_REQUIRE_AUTH,
    planLimitsFile: env.PLAN_LIMITS_FILE,
    auth: {
      accessTokenTtlSeconds: env.ACCESS_TOKEN_TTL_SECONDS,
      refreshTokenTtlSeconds: env.REFRESH_TOKEN_TTL_SECONDS,
      refreshReuseGraceSeconds: env.REFRESH_REUSE_GRACE_S,
      mfaTokenTtlSeconds: env.MFA_TOKEN_TTL_SECONDS,
      recentAuthSeconds: env.RECENT_AUTH_SECONDS,
      signingKeys: env.JWT_SIGNING_KEYS,
      webauthn: {
        rpId: env.WEBAUTHN_RP_ID ?? new URL(publicUrl).hostname,
        rpName: env.WEBAUTHN_RP_NAME,
        origins: env.WEBAUTHN_ORIGINS?.split(",").map((origin) => withoutTrailingSlash(origin.trim())) ?? [
          new URL(publicUrl).origin,
        ],
      },
      pricesFile: env.PRICES_FILE,
      passwordHash: { memoryCost: env.PASSWORD_HASH_MEMORY_KIB, timeCost: env.PASSWORD_HASH_TIME_COST },
      loginLimits: {
        perPair: env.LOGIN_FAILURES_PER_PAIR,
        perIp: env.LOGIN_FAILURES_PER_IP,
        perEmail: env.LOGIN_FAILURES_PER_EMAIL,
        slowdownMs: env.LOGIN_SLOWDOWN_MS,
        windowSeconds: env.LOGIN_FAILURE_WINDOW_SECONDS,
      },
      cacheTtlMs: env.AUTH_CACHE_TTL_MS,
      mail: {
        smtpUrl: env.SMTP_URL,
        from: env.MAIL_FROM ?? `Workflow Platform <no-reply@${new URL(publicUrl).hostname}>`,
      },
      appUrl: withoutTrailingSlash(env.APP_URL ?? publicUrl),
      invitationTtlSeconds: env.INVITATION_TTL_SECONDS,
      passwordResetTtlSeconds: env.PASSWORD_RESET_TTL_SECONDS,
    },
    webhooks: { maxBytes: env.WEBHOOK_MAX_BYTES, maxFileContentBytes: env.WEBHOOK_MAX_FILE_CONTENT_BYTES },
    runs: {
      waitTimeoutMs: env.WAIT_TIMEOUT_MS,
      runsInPlace: env.RUNS_IN_PLACE,
      retentionDays: env.RUN_RETENTION_DAYS,
      leaseMs: env.RUN_LEASE_MS,
      queuePartitions: env.RUN_QUEUE_PARTITIONS,
      stepOutputMaxBytes: env.STEP_OUTPUT_MAX_BYTES,
      forEachMaxItems: env.FOR_EACH_MAX_ITEMS,
      logLimits: {
        stepLines: env.STEP_LOG_MAX_LINES,
        stepBytes: env.STEP_LOG_MAX_BYTES,
        runBytes: env.RUN_LOG_MAX_BYTES,
      },
      flowCallMaxDepth: env.FLOW_CALL_MAX_DEPTH,
      triggerMaxBytes: env.TRIGGER_MAX_BYTES,
    },
    steps: {
      http: {
        allowPrivateNetwork: env.ALLOW_PRIVATE_NETWORK,
        allowedNetworks: env.HTTP_REQUEST_ALLOWED_NETWORKS,
        maxResponseBytes: env.HTTP_REQUEST_MAX_RESPONSE_BYTES,
      },
      js: {
        memoryBytes: env.JS_MEMORY_LIMIT_MB * 1024 * 1024,
        timeoutMs: env.JS_TIME_LIMIT_MS,
        workers: env.JS_WORKERS,
        // the sandbox keeps no more than an attempt may record (characters are at least a byte each)
        logLines: env.STEP_LOG_MAX_LINES,
        logChars: env.STEP_LOG_MAX_BYTES,
      },
    },
    registry: {
      url: withoutTrailingSlash(env.MCP_REGISTRY_URL),
      syncIntervalMs: env.MCP_REGISTRY_SYNC_INTERVAL_S * 1000,
      timeoutMs: env.MCP_REGISTRY_TIMEOUT_MS,
      cacheBytes: env.MCP_REGISTRY_CACHE_MB * 1024 * 1024,
    },
  };
}

export type CoreConfig = ReturnType<typeof toCoreConfig>;
/** Settings of accounts and authentication. */
export type AuthConfig = CoreConfig["auth"];
/** The public MCP registry's mirror. */
export type RegistryConfig = CoreConfig["registry"];
/** Limits of the webhook ingress. */
export type WebhookConfig = CoreConfig["webhooks"];
/** Settings of flow runs. */
export type RunsConfig = CoreConfig["runs"];
/** Settings of the built-in steps, shaped as the options of their factories (engine/module-steps.ts). */
export type StepsConfig = CoreConfig["steps"];

/**
 * Variables a release renamed, by their old name: one still set stops the process, since a
 * setting ignored would change what the deployment does without a word.
 */
const RENAMED: Record<string, string> = { WAIT_RUNS_IN_PLACE: "RUNS_IN_PLACE" };

/**
 * Parses an environment against a schema; on failure throws one line that names
 * every offending variable, which the apps print before exiting.
 */
export function parseEnv<S extends z.ZodType>(schema: S, env: Record<string, string | undefined>): z.infer<S> {
  const renamed = Object.entries(RENAMED)
    .filter(([old]) => env[old] !== undefined)
    .map(([old, now]) => `${old}: renamed ${now}`);
  const result = schema.safeParse(env);
  if (result.success && renamed.length === 0) return result.data;
  const issues = result.success ? [] : result.error.issues;
  const problems = issues.map((issue) => `${issue.path.join(".") || "environment"}: ${issue.message}`);
  throw new ConfigError(`invalid configuration: ${[...renamed, ...problems].join("; ")}`);
}

export class ConfigError extends Error {
  override name = "ConfigError";
}
