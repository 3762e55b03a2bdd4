import { describe, expect, test } from "bun:test";
import { coreConfigSchema, parseEnv, toCoreConfig } from "../config.ts";

describe("webhook settings", () => {
  test("default to a 10 MiB body and 1 MiB of kept file content", () => {
    expect(toCoreConfig(parseEnv(coreConfigSchema, {})).webhooks).toEqual({
      maxBytes: 10 * 1024 * 1024,
      maxFileContentBytes: 1024 * 1024,
    });
  });

  test("are read from WEBHOOK_MAX_BYTES and WEBHOOK_MAX_FILE_CONTENT_BYTES, and a bad value names its variable", () => {
    const env = { WEBHOOK_MAX_BYTES: "65536", WEBHOOK_MAX_FILE_CONTENT_BYTES: "0" };
    expect(toCoreConfig(parseEnv(coreConfigSchema, env)).webhooks).toEqual({ maxBytes: 65536, maxFileContentBytes: 0 });
    expect(() => parseEnv(coreConfigSchema, { WEBHOOK_MAX_BYTES: "0" })).toThrow(
      "invalid configuration: WEBHOOK_MAX_BYTES: Too small: expected number to be >=1",
    );
  });
});
