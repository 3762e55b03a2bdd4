import { trace } from "@opentelemetry/api";
import pino, { type Logger } from "pino";

export type { Logger };

/**
 * Fields of database errors that carry the values of the failed query: PGlite's `params`
 * (and its `queryOptions`), PostgreSQL's `detail` ("Key (email)=(ada@example.com) already
 * exists"), `where`. A failed insert of a token hash, a sealed secret or an email must not
 * put it in the log; the code, message and query text are enough to debug.
 */
const VALUE_BEARING_FIELDS = ["params", "parameters", "queryOptions", "detail", "where", "internalQuery"];

/** pino's error serializer, minus the values a database error may carry, in the error and its causes. */
export function serializeError(error: unknown): unknown {
  const serialized = pino.stdSerializers.err(error as Error) as unknown;
  const scrub = (value: unknown, depth: number): unknown => {
    if (!value || typeof value !== "object" || depth > 5) return value;
    const record = value as Record<string, unknown>;
    for (const field of VALUE_BEARING_FIELDS) {
      if (field in record) record[field] = "[redacted]";
    }
    if ("cause" in record) record.cause = scrub(record.cause, depth + 1);
    return record;
  };
  return scrub(serialized, 0);
}

export interface LoggerOptions {
  level: string;
  name: string;
  /** Where lines go (default stdout); tests pass a stream of their own to read what was logged. */
  destination?: pino.DestinationStream;
}

/** The trace and span of the active span, as a log line's `trace_id` and `span_id` (none: no span is active). */
function activeSpanIds(): { trace_id?: string; span_id?: string } {
  const span = trace.getActiveSpan();
  if (!span) return {};
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}

/** Structured JSON logs on stdout; `level: "silent"` for tests. */
export function createLogger(options: LoggerOptions): Logger {
  return pino(
    {
      name: options.name,
      level: options.level,
      base: { service: options.name },
      timestamp: pino.stdTimeFunctions.isoTime,
      serializers: { err: serializeError },
      // A line logged while a span is active names it (tracing/spans.ts): a run's lines carry its trace.
      mixin: activeSpanIds,
      redact: {
        paths: ["req.headers.authorization", "req.headers['x-api-key']", "*.password", "*.token"],
        remove: true,
      },
    },
    options.destination,
  );
}
