import { z } from "zod";

/**
 * The OpenTelemetry variables the platform reads to trace its runs (docs/guide/observability.md),
 * named and read as the OpenTelemetry specification defines them. Tracing is on when an OTLP
 * endpoint is set; unset, no span is made and nothing is sent. The exporters read their own
 * variables too (`OTEL_EXPORTER_OTLP_HEADERS`, `…_TIMEOUT`, `…_COMPRESSION` and their `TRACES_`
 * forms), and the endpoint: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as it is, else
 * `OTEL_EXPORTER_OTLP_ENDPOINT` with `/v1/traces` appended.
 */

const milliseconds = (fallback: number, description: string) =>
  z.coerce.number().int().min(0).default(fallback).meta({ description });

const protocol = z.enum(["http/protobuf", "http/json"]);

export const tracingEnvSchema = z.object({
  OTEL_EXPORTER_OTLP_ENDPOINT: z.url().optional().meta({
    description:
      "Base URL of the OTLP/HTTP receiver (an OpenTelemetry Collector: http://collector:4318); traces go to its /v1/traces. Unset (and OTEL_EXPORTER_OTLP_TRACES_ENDPOINT unset): no tracing.",
  }),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.url().optional().meta({
    description: "Full URL traces are sent to, instead of OTEL_EXPORTER_OTLP_ENDPOINT's /v1/traces.",
  }),
  OTEL_EXPORTER_OTLP_PROTOCOL: protocol.default("http/protobuf").meta({
    description: "OTLP encoding: http/protobuf or http/json (gRPC is not supported).",
  }),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: protocol.optional().meta({
    description: "OTLP encoding of traces, instead of OTEL_EXPORTER_OTLP_PROTOCOL.",
  }),
  OTEL_SERVICE_NAME: z.string().min(1).optional().meta({
    description: "The process's service.name; unset: platform-api (the API, and embedded mode) or platform-worker.",
  }),
  OTEL_TRACES_SAMPLER: z
    .enum([
      "always_on",
      "always_off",
      "traceidratio",
      "parentbased_always_on",
      "parentbased_always_off",
      "parentbased_traceidratio",
    ])
    .default("parentbased_always_on")
    .meta({ description: "Which traces are recorded (the specification's samplers)." }),
  OTEL_TRACES_SAMPLER_ARG: z.coerce.number().min(0).max(1).default(1).meta({
    description: "The ratio of traces the traceidratio samplers record, 0 to 1.",
  }),
  OTEL_BSP_SCHEDULE_DELAY: milliseconds(5000, "Milliseconds between two exports of finished spans."),
  OTEL_BSP_EXPORT_TIMEOUT: milliseconds(30_000, "Milliseconds an export may take before it is given up."),
  OTEL_BSP_MAX_QUEUE_SIZE: z.coerce.number().int().min(1).default(2048).meta({
    description: "Finished spans kept for export at most; more are dropped (and counted by the SDK).",
  }),
  OTEL_BSP_MAX_EXPORT_BATCH_SIZE: z.coerce.number().int().min(1).default(512).meta({
    description: "Spans sent in one export at most.",
  }),
  OTEL_SDK_DISABLED: z
    .enum(["true", "false", ""])
    .default("false")
    .meta({ description: "true: no tracing, whatever else is set." }),
  TRACE_INCOMING: z.enum(["trust", "link", "ignore"]).default("link").meta({
    description:
      "What a traceparent header on a webhook, a gateway call or a run start does: trust (the run's trace continues the caller's), link (the run's trace begins anew and links to the caller's span) or ignore. Webhooks are public: trust lets anyone who can send one join a trace.",
  }),
});

export type TracingEnv = z.output<typeof tracingEnvSchema>;

/** How this process traces, or null when it does not. */
export interface TracingSettings {
  /** Where traces are posted. */
  url: string;
  protocol: z.output<typeof protocol>;
  serviceName: string;
  sampler: { name: TracingEnv["OTEL_TRACES_SAMPLER"]; ratio: number };
  batch: {
    scheduledDelayMillis: number;
    exportTimeoutMillis: number;
    maxQueueSize: number;
    maxExportBatchSize: number;
  };
  incoming: TracingEnv["TRACE_INCOMING"];
}

/** The settings of a process named `defaultServiceName` from its variables (parsed by `tracingEnvSchema`). */
export function tracingSettings(
  env: TracingEnv,
  defaultServiceName: "platform-api" | "platform-worker",
): TracingSettings | null {
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!endpoint || env.OTEL_SDK_DISABLED === "true") return null;
  return {
    url: env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? `${endpoint.replace(/\/$/, "")}/v1/traces`,
    protocol: env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL,
    serviceName: env.OTEL_SERVICE_NAME ?? defaultServiceName,
    sampler: { name: env.OTEL_TRACES_SAMPLER, ratio: env.OTEL_TRACES_SAMPLER_ARG },
    batch: {
      scheduledDelayMillis: env.OTEL_BSP_SCHEDULE_DELAY,
      exportTimeoutMillis: env.OTEL_BSP_EXPORT_TIMEOUT,
      maxQueueSize: env.OTEL_BSP_MAX_QUEUE_SIZE,
      maxExportBatchSize: env.OTEL_BSP_MAX_EXPORT_BATCH_SIZE,
    },
    incoming: env.TRACE_INCOMING,
  };
}
