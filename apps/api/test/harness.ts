import { randomBytes } from "node:crypto";
import { coreConfigSchema, createLogger, createServices, type Services, toCoreConfig } from "@platform/core";
import { openTestDatabase, type TestBackend, testEnv } from "@platform/db/testing";
import { type RunningServer, startServer } from "../src/server.ts";

export interface TestApiOptions {
  /** Database backend; the Postgres broker adapter runs on it unless `redis` is set. */
  backend: TestBackend;
  redis?: boolean;
  maxBodyBytes?: number;
  /** Settings as environment variables (e.g. `LOGIN_ATTEMPTS_PER_EMAIL`), over the test defaults. */
  env?: Record<string, string>;
  /** Keeps the server's log lines from this level up, for `logs()`; unset, nothing is logged. */
  captureLogs?: "trace" | "debug" | "info";
}

export interface TestApi {
  url: string;
  services: Services;
  /** `fetch` against the running server, with a JSON body when `json` is given. */
  request(path: string, init?: RequestInit & { json?: unknown }): Promise<Response>;
  /** The log output so far (one JSON object per line), when started with `captureLogs`. */
  logs(): string;
  stop(): Promise<void>;
}

/** The real API on a real port, on a fresh database of its own. */
export async function startTestApi(options: TestApiOptions): Promise<TestApi> {
  const database = await openTestDatabase(options.backend);
  const config = toCoreConfig(
    coreConfigSchema.parse({
      LOG_LEVEL: "silent",
      REDIS_URL: options.redis ? testEnv.REDIS_URL : undefined,
      // Keys of its own, so no test writes one into ./data.
      JWT_SIGNING_KEYS: `test:${randomBytes(32).toString("base64url")}`,
      SECRETS_KEY: randomBytes(32).toString("base64url"),
      // Redis outlives test runs: each server keeps to a namespace of its own.
      BROKER_NAMESPACE: `test-${randomBytes(6).toString("hex")}`,
      // Every test request comes from 127.0.0.1: sign-in limits stay out of the way
      // unless a test sets them.
      LOGIN_ATTEMPTS_PER_EMAIL: "1000000",
      LOGIN_ATTEMPTS_PER_IP: "1000000",
      ...options.env,
    }),
  );
  const logLines: string[] = [];
  const logger = createLogger({
    level: options.captureLogs ?? "silent",
    name: "api-test",
    destination: { write: (line: string) => logLines.push(line) },
  });
  const handle = await createServices(config, logger, database);
  let server: RunningServer;
  try {
    server = startServer(handle.services, {
      port: 0,
      host: "127.0.0.1",
      maxBodyBytes: options.maxBodyBytes ?? 10 * 1024 * 1024,
    });
  } catch (error) {
    await handle.close();
    throw error;
  }
  return {
    url: server.url,
    services: handle.services,
    request(path, init = {}) {
      const { json, ...rest } = init;
      const headers = new Headers(rest.headers);
      if (json !== undefined) headers.set("content-type", "application/json");
      return fetch(`${server.url}${path}`, {
        ...rest,
        headers,
        body: json !== undefined ? JSON.stringify(json) : rest.body,
      });
    },
    logs: () => logLines.join(""),
    async stop() {
      await server.stop(1000);
      await handle.close();
    },
  };
}
