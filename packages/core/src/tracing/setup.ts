import { context, propagation, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter as JsonExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPTraceExporter as ProtobufExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { detectResources, envDetector, resourceFromAttributes } from "@opentelemetry/resources";
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  type Sampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from "@opentelemetry/sdk-trace";
import type { TracingSettings } from "./settings.ts";
import { traceWith } from "./spans.ts";

function samplerOf({ name, ratio }: TracingSettings["sampler"]): Sampler {
  const root = name.endsWith("always_off")
    ? new AlwaysOffSampler()
    : name.endsWith("traceidratio")
      ? new TraceIdRatioBasedSampler(ratio)
      : new AlwaysOnSampler();
  return name.startsWith("parentbased_") ? new ParentBasedSampler({ root }) : root;
}

/**
 * Starts this process's tracing: an OTLP exporter behind a batching processor, the W3C
 * `traceparent` propagator, and a context manager that follows async calls, so the span a
 * step runs in is the parent of what it calls. Answers how to flush and stop it (at
 * shutdown, after the last run this process ends). Settings null: nothing is started, and
 * every span helper (spans.ts) runs its work alone.
 */
export function startTracing(settings: TracingSettings | null): { shutdown(): Promise<void> } {
  if (!settings) return { shutdown: async () => {} };
  const exporter =
    settings.protocol === "http/json"
      ? new JsonExporter({ url: settings.url })
      : new ProtobufExporter({ url: settings.url });
  const provider = new TracerProvider({
    // OTEL_RESOURCE_ATTRIBUTES' attributes, with the service's name as the settings give it.
    resource: detectResources({ detectors: [envDetector] }).merge(
      resourceFromAttributes({ "service.name": settings.serviceName }),
    ),
    sampler: samplerOf(settings.sampler),
    spanProcessors: [
      new BatchSpanProcessor({
        exporter,
        ...settings.batch,
        maxExportBatchSize: Math.min(settings.batch.maxExportBatchSize, settings.batch.maxQueueSize),
      }),
    ],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  traceWith(provider.getTracer("platform"), settings.incoming);
  return {
    async shutdown() {
      traceWith(null, settings.incoming);
      await provider.shutdown();
      // The process's globals go back as they were (a test process starts tracing more than once).
      trace.disable();
      propagation.disable();
      context.disable();
    },
  };
}
