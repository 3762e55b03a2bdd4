import { describe, expect, test } from "bun:test";
import { coreConfigSchema, parseEnv, toCoreConfig } from "../config.ts";

const config = (env: Record<string, string>) => toCoreConfig(parseEnv(coreConfigSchema, env));
const steps = (env: Record<string, string>) => config(env).steps;

describe("built-in step settings", () => {
  test("default to a guarded network, 10 MiB responses, 64 MiB and 1 s per js run on 2 workers", () => {
    expect(steps({})).toEqual({
      http: { allowPrivateNetwork: false, allowedNetworks: [], maxResponseBytes: 10 * 1024 * 1024 },
      js: { memoryBytes: 64 * 1024 * 1024, timeoutMs: 1000, workers: 2, logLines: 100, logChars: 16 * 1024 },
    });
    expect(config({}).runs.logLimits).toEqual({ stepLines: 100, stepBytes: 16 * 1024, runBytes: 64 * 1024 });
  });

  test("are read from their variables", () => {
    const env = {
      ALLOW_PRIVATE_NETWORK: "true",
      HTTP_REQUEST_ALLOWED_NETWORKS: " 10.1.2.3, 10.8.0.0/16,fd00::/8 ",
      HTTP_REQUEST_MAX_RESPONSE_BYTES: "1024",
      JS_MEMORY_LIMIT_MB: "16",
      JS_TIME_LIMIT_MS: "250",
      JS_WORKERS: "4",
      STEP_LOG_MAX_LINES: "20",
      STEP_LOG_MAX_BYTES: "2048",
      RUN_LOG_MAX_BYTES: "8192",
    };
    expect(steps(env)).toEqual({
      http: {
        allowPrivateNetwork: true,
        allowedNetworks: ["10.1.2.3", "10.8.0.0/16", "fd00::/8"],
        maxResponseBytes: 1024,
      },
      js: { memoryBytes: 16 * 1024 * 1024, timeoutMs: 250, workers: 4, logLines: 20, logChars: 2048 },
    });
    expect(config(env).runs.logLimits).toEqual({ stepLines: 20, stepBytes: 2048, runBytes: 8192 });
  });

  test.each([
    [{ ALLOW_PRIVATE_NETWORK: "yes" }, "ALLOW_PRIVATE_NETWORK: must be true or false"],
    [
      { HTTP_REQUEST_ALLOWED_NETWORKS: "10.0.0.0/8,intranet" },
      'HTTP_REQUEST_ALLOWED_NETWORKS: "intranet" is not an IP',
    ],
    [{ HTTP_REQUEST_ALLOWED_NETWORKS: "10.0.0.0/40" }, 'HTTP_REQUEST_ALLOWED_NETWORKS: "10.0.0.0/40" has a prefix'],
    [{ JS_MEMORY_LIMIT_MB: "4" }, "JS_MEMORY_LIMIT_MB: Too small"],
    [{ JS_TIME_LIMIT_MS: "soon" }, "JS_TIME_LIMIT_MS: must be a number"],
    [{ JS_WORKERS: "0" }, "JS_WORKERS: Too small"],
    [{ STEP_LOG_MAX_LINES: "-1" }, "STEP_LOG_MAX_LINES: Too small"],
    [{ WAIT_RUNS_IN_PLACE: "false" }, "WAIT_RUNS_IN_PLACE: renamed RUNS_IN_PLACE"],
  ])("refuses %j", (env, message) => {
    expect(() => parseEnv(coreConfigSchema, env)).toThrow(`invalid configuration: ${message}`);
  });
});
