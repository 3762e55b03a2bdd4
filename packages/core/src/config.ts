import { z } from "zod";
import { parseSecretsKeys } from "./sealing.ts";

/** `true`/`1` or `false`/`0`; anything else is refused rather than guessed. */
export const envBoolean = (fallback: boolean) =>
  z
    .enum(["true", "false", "1", "0"], { error: "must be true or false" })
    .default(fallback ? "true" : "false")
    .transform((value) => value === "true" || value === "1");

/** An empty variable (`DATABASE_URL=`) counts as unset. */
const optionalUrl = z.preprocess((value) => (value === "" ? undefined : value), z.url().optional());

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
  /** The API's public address ({base_url}); links in responses are built from it. */
  PUBLIC_URL: z.url().default("http://localhost:3000"),
  /** {webhook_url}; defaults to PUBLIC_URL + /webhooks. */
  WEBHOOK_BASE_URL: optionalUrl,
  /** Gateways' public base; a gateway's url is this + /<topic>. Defaults to PUBLIC_URL + /gw. */
  GATEWAY_BASE_URL: optionalUrl,
  DATA_DIR: z.string().min(1).default("./data"),
  DATABASE_URL: optionalUrl,
  REDIS_URL: optionalUrl,
  /** Prefix of every broker scope, so deployments (or test runs) sharing one Redis never meet. */
  BROKER_NAMESPACE: z
    .string()
    .regex(/^[\w.-]{0,64}$/, { error: "may hold letters, digits, '_', '.' and '-' (at most 64)" })
    .default(""),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  /** Lifetime of an access token (JWT), in seconds. */
  ACCESS_TOKEN_TTL_SECONDS: z.coerce.number().int().min(10).max(86_400).default(900),
  /** Lifetime of a refresh token, in seconds; each refresh issues a new one. */
  REFRESH_TOKEN_TTL_SECONDS: z.coerce
    .number()
    .int()
    .min(60)
    .default(30 * 86_400),
  /** How long an MFA token from a password login waits for its second factor, in seconds. */
  MFA_TOKEN_TTL_SECONDS: z.coerce.number().int().min(30).max(3600).default(300),
  /** Access-token signing keys (see signingKeysSchema). When unset, one key is generated once into DATA_DIR (mode 0600). */
  JWT_SIGNING_KEYS: signingKeysSchema.optional(),
  /** Seals secrets kept in the database (see secretsKeySchema). When unset, one key is generated once into DATA_DIR (mode 0600). */
  SECRETS_KEY: secretsKeySchema.optional(),
  /** WebAuthn relying party id; defaults to PUBLIC_URL's host name. */
  WEBAUTHN_RP_ID: z.string().min(1).optional(),
  /** WebAuthn relying party name shown by authenticators. */
  WEBAUTHN_RP_NAME: z.string().min(1).default("Workflow Platform"),
  /** Origins allowed in WebAuthn responses, comma-separated; defaults to PUBLIC_URL's origin. */
  WEBAUTHN_ORIGINS: z.string().min(1).optional(),
  /** A JSON file holding the price catalog (an array of Price objects); built-in defaults when unset. */
  PRICES_FILE: z.string().min(1).optional(),
  /** Sign-in, second-factor and sign-up attempts allowed per email per window (each kind counted apart). */
  LOGIN_ATTEMPTS_PER_EMAIL: z.coerce.number().int().min(1).default(10),
  /** The same, per client IP. */
  LOGIN_ATTEMPTS_PER_IP: z.coerce.number().int().min(1).default(50),
  /** The window of the two limits above, in seconds. */
  LOGIN_ATTEMPT_WINDOW_SECONDS: z.coerce.number().int().min(1).default(900),
  /**
   * How long a process trusts a verified session or API key without asking the database, in
   * ms; revocations reach every process at once through the Broker, so this only bounds the
   * case where one could not be announced. 0 turns the cache off.
   */
  AUTH_CACHE_TTL_MS: z.coerce.number().int().min(0).max(300_000).default(10_000),
  /** The spec states the metrics request without a credential; `true` makes one required. */
  METRICS_REQUIRE_AUTH: envBoolean(false),
  /** Largest webhook body accepted, in bytes (413 beyond); read no further than that. */
  WEBHOOK_MAX_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(10 * 1024 * 1024),
  /** Largest file in a multipart webhook whose content (base64) is kept in the trigger data; larger ones keep their hash. */
  WEBHOOK_MAX_FILE_CONTENT_BYTES: z.coerce
    .number()
    .int()
    .min(0)
    .default(1024 * 1024),
});

export type CoreEnv = z.infer<typeof coreConfigSchema>;

/** Settings of accounts and authentication. */
export interface AuthConfig {
  accessTokenTtlSeconds: number;
  refreshTokenTtlSeconds: number;
  mfaTokenTtlSeconds: number;
  /** Raw `JWT_SIGNING_KEYS`; when absent, keys are generated into `dataDir`. */
  signingKeys?: string;
  webauthn: { rpId: string; rpName: string; origins: string[] };
  pricesFile?: string;
  loginLimits: { perEmail: number; perIp: number; windowSeconds: number };
  /** How long a verified credential is trusted without the database (0: never). */
  cacheTtlMs: number;
}

/** Limits of the webhook ingress. */
export interface WebhookConfig {
  maxBytes: number;
  maxFileContentBytes: number;
}

export interface CoreConfig {
  publicUrl: string;
  webhookBaseUrl: string;
  gatewayBaseUrl: string;
  dataDir: string;
  databaseUrl?: string;
  redisUrl?: string;
  brokerNamespace: string;
  /** Raw `SECRETS_KEY` (one key or `kid:key,...`); when absent, a key is generated into `dataDir`. */
  secretsKey?: string;
  logLevel: CoreEnv["LOG_LEVEL"];
  auth: AuthConfig;
  /** Whether `POST /monitoring/metrics/current` demands a credential. */
  metricsRequireAuth: boolean;
  webhooks: WebhookConfig;
}

const withoutTrailingSlash = (url: string) => url.replace(/\/+$/, "");

export function toCoreConfig(env: CoreEnv): CoreConfig {
  const publicUrl = withoutTrailingSlash(env.PUBLIC_URL);
  return {
    publicUrl,
    webhookBaseUrl: withoutTrailingSlash(env.WEBHOOK_BASE_URL ?? `${publicUrl}/webhooks`),
    gatewayBaseUrl: withoutTrailingSlash(env.GATEWAY_BASE_URL ?? `${publicUrl}/gw`),
    dataDir: env.DATA_DIR,
    databaseUrl: env.DATABASE_URL,
    redisUrl: env.REDIS_URL,
    brokerNamespace: env.BROKER_NAMESPACE,
    secretsKey: env.SECRETS_KEY,
    logLevel: env.LOG_LEVEL,
    metricsRequireAuth: env.METRICS_REQUIRE_AUTH,
    auth: {
      accessTokenTtlSeconds: env.ACCESS_TOKEN_TTL_SECONDS,
      refreshTokenTtlSeconds: env.REFRESH_TOKEN_TTL_SECONDS,
      mfaTokenTtlSeconds: env.MFA_TOKEN_TTL_SECONDS,
      signingKeys: env.JWT_SIGNING_KEYS,
      webauthn: {
        rpId: env.WEBAUTHN_RP_ID ?? new URL(publicUrl).hostname,
        rpName: env.WEBAUTHN_RP_NAME,
        origins: env.WEBAUTHN_ORIGINS?.split(",").map((origin) => withoutTrailingSlash(origin.trim())) ?? [
          new URL(publicUrl).origin,
        ],
      },
      pricesFile: env.PRICES_FILE,
      loginLimits: {
        perEmail: env.LOGIN_ATTEMPTS_PER_EMAIL,
        perIp: env.LOGIN_ATTEMPTS_PER_IP,
        windowSeconds: env.LOGIN_ATTEMPT_WINDOW_SECONDS,
      },
      cacheTtlMs: env.AUTH_CACHE_TTL_MS,
    },
    webhooks: { maxBytes: env.WEBHOOK_MAX_BYTES, maxFileContentBytes: env.WEBHOOK_MAX_FILE_CONTENT_BYTES },
  };
}

/**
 * Parses an environment against a schema; on failure throws one line that names
 * every offending variable, which the apps print before exiting.
 */
export function parseEnv<S extends z.ZodType>(schema: S, env: Record<string, string | undefined>): z.infer<S> {
  const result = schema.safeParse(env);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => `${issue.path.join(".") || "environment"}: ${issue.message}`);
  throw new ConfigError(`invalid configuration: ${problems.join("; ")}`);
}

export class ConfigError extends Error {
  override name = "ConfigError";
}
