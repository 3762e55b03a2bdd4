import { expect, test } from "bun:test";
import { capturedLogger } from "../captured-logger.ts";
import { tracingEnvSchema, tracingSettings } from "./settings.ts";
import { startTracing } from "./setup.ts";
import { activeTraceparent, inSpan } from "./spans.ts";

test("a line logged while a span is active names its trace and span; others name none", async () => {
  const { logger, text } = capturedLogger();
  logger.info("before");
  const sink = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => Response.json({}) });
  const endpoint = `http://127.0.0.1:${sink.port}`;
  const env = tracingEnvSchema.parse({
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
  });
  const tracing = startTracing(tracingSettings(env, "platform-worker"));
  let traceparent: string | null = null;
  try {
    await inSpan("step shape", {}, async () => {
      traceparent = activeTraceparent();
      logger.info("inside");
    });
  } finally {
    await tracing.shutdown();
    sink.stop(true);
  }
  const [before, inside] = text()
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line));
  expect(before.trace_id).toBeUndefined();
  const [, traceId, spanId] = (traceparent ?? "").split("-");
  expect({ trace_id: inside.trace_id, span_id: inside.span_id }).toEqual({ trace_id: traceId, span_id: spanId });
});

test("tracing is off without an endpoint, or with OTEL_SDK_DISABLED", () => {
  expect(tracingSettings(tracingEnvSchema.parse({}), "platform-api")).toBeNull();
  const disabled = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_SDK_DISABLED: "true" };
  expect(tracingSettings(tracingEnvSchema.parse(disabled), "platform-api")).toBeNull();
  const on = tracingSettings(
    tracingEnvSchema.parse({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/" }),
    "platform-api",
  );
  expect(on).toMatchObject({ url: "http://collector:4318/v1/traces", serviceName: "platform-api", incoming: "link" });
});
