import {
  type Attributes,
  type Context,
  context,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from "@opentelemetry/api";
import type { TracingSettings } from "./settings.ts";

/**
 * The spans of runs: helpers that make one when this process traces (setup.ts), and only run
 * the work they are given when it does not, so that a process without an OTLP endpoint pays
 * one comparison per helper. A span's attributes name what ran (flow, step, subject, attempt)
 * and how it ended; never secrets (error texts are the run's, redacted as the run records
 * them), nor trigger data or outputs unless the run's account shows them (run-data.ts).
 */

let tracer: Tracer | null = null;
let incoming: TracingSettings["incoming"] = "link";

/** Set by `startTracing`: the tracer spans are made with (null: none are), and what an incoming traceparent does. */
export function traceWith(active: Tracer | null, onIncoming: TracingSettings["incoming"]): void {
  tracer = active;
  incoming = onIncoming;
}

export const tracingOn = () => tracer !== null;

/** A span's status from what ended it: an error text (already redacted), or null when it succeeded. */
function endWith(span: Span, error: string | null): void {
  if (error !== null) span.setStatus({ code: SpanStatusCode.ERROR, message: error });
  span.end();
}

/**
 * Thrown by work that stops without failing, for another process to do it (an execution in
 * place past its step or time limit, queued for the workers): the spans it passes through end without
 * an error status, marked `platform.handed_over`.
 */
export class HandedOver extends Error {}

/**
 * Runs `work` in a span named `name`, the child of the active span (or of `parent`), which it
 * ends with `errorOf`'s answer for the result; a thrown error ends it with `describe`'s text
 * for it (the run's redaction), else with the error's name only (a thrown text may hold what
 * the run redacts), and is thrown on.
 */
export async function inSpan<T>(
  name: string,
  options: {
    kind?: SpanKind;
    attributes?: Attributes;
    parent?: Context;
    startTime?: number;
    describe?: (error: unknown) => string;
  },
  work: (span: Span | undefined) => Promise<T>,
  errorOf: (result: T) => string | null = () => null,
): Promise<T> {
  if (!tracer) return work(undefined);
  const parent = options.parent ?? context.active();
  const span = tracer.startSpan(
    name,
    { kind: options.kind, attributes: options.attributes, startTime: options.startTime },
    parent,
  );
  let result: T;
  try {
    result = await context.with(trace.setSpan(parent, span), () => work(span));
  } catch (error) {
    if (error instanceof HandedOver) {
      span.setAttribute("platform.handed_over", true);
      endWith(span, null);
    } else endWith(span, options.describe?.(error) ?? (error instanceof Error ? error.name : "error"));
    throw error;
  }
  endWith(span, errorOf(result));
  return result;
}

/** A span that began and ended already (a run's time in its queue). */
export function pastSpan(name: string, parent: Context, startTime: number, attributes: Attributes): void {
  tracer?.startSpan(name, { startTime, attributes }, parent).end();
}

/** The `traceparent` of the span a context holds (null: none). */
function traceparentOf(holding: Context): string | null {
  const carrier: Record<string, string> = {};
  propagation.inject(holding, carrier);
  return carrier.traceparent ?? null;
}

/** The `traceparent` of the active span (null: no span is recording). */
export function activeTraceparent(): string | null {
  return tracer ? traceparentOf(context.active()) : null;
}

/** The context a `traceparent` names (a run's stored one), for the spans that continue its trace. */
export function contextOf(traceparent: string | null): Context {
  return traceparent ? propagation.extract(ROOT_CONTEXT, { traceparent }) : ROOT_CONTEXT;
}

/**
 * One outgoing request of a step (an http.request's hop, an mcp.call's message) as a client
 * span, whose `traceparent` the request carries to the upstream. The span names the server
 * (host and port) but not the path or query, where URLs often carry credentials.
 */
export function clientRequest(
  method: string,
  url: URL,
  headers: Headers,
  send: () => Promise<Response>,
): Promise<Response> {
  if (!tracer) return send();
  const attributes = {
    "http.request.method": method,
    "server.address": url.hostname,
    "server.port": Number(url.port || (url.protocol === "https:" ? 443 : 80)),
    "url.scheme": url.protocol.slice(0, -1),
  };
  const work = async (span: Span | undefined) => {
    const traceparent = activeTraceparent();
    if (traceparent) headers.set("traceparent", traceparent);
    const response = await send();
    span?.setAttribute("http.response.status_code", response.status);
    return response;
  };
  return inSpan(`HTTP ${method}`, { kind: SpanKind.CLIENT, attributes }, work, (response) =>
    response.status >= 400 ? `HTTP ${response.status}` : null,
  );
}

/**
 * How a run's acceptance span relates to the `traceparent` its request came with, per
 * TRACE_INCOMING: `trust` continues the caller's trace, `link` begins one that links to the
 * caller's span, `ignore` begins one. A start made by a run (`flow.call`) continues the
 * calling step's trace whatever the setting.
 */
function acceptanceParent(
  traceparent: string | null | undefined,
  internal: boolean,
): {
  parent: Context;
  links: { context: ReturnType<Span["spanContext"]> }[];
} {
  if (internal) return { parent: context.active(), links: [] };
  if (!traceparent || incoming === "ignore") return { parent: ROOT_CONTEXT, links: [] };
  const callers = trace.getSpanContext(contextOf(traceparent));
  if (!callers || !trace.isSpanContextValid(callers)) return { parent: ROOT_CONTEXT, links: [] };
  if (incoming === "trust") return { parent: contextOf(traceparent), links: [] };
  return { parent: ROOT_CONTEXT, links: [{ context: callers }] };
}

/**
 * Runs a start's acceptance (`accept`: records and queues the run) in its span, handing it the
 * span's `traceparent` to store with the run (null when tracing is off).
 */
export async function accepting<T>(
  via: string,
  attributes: Attributes,
  callers: { traceparent?: string | null; internal: boolean },
  accept: (traceparent: string | null) => Promise<T>,
): Promise<T> {
  if (!tracer) return accept(null);
  const { parent, links } = acceptanceParent(callers.traceparent, callers.internal);
  const span = tracer.startSpan(`accept ${via}`, { kind: SpanKind.SERVER, attributes, links }, parent);
  try {
    const result = await accept(traceparentOf(trace.setSpan(parent, span)));
    endWith(span, null);
    return result;
  } catch (error) {
    endWith(span, error instanceof Error ? error.name : "error");
    throw error;
  }
}

/**
 * A start made in a background transaction (a schedule's tick, a bulk replay's batch): its
 * acceptance span, begun and ended now (no request to continue), and the `traceparent` to
 * store with its run; null when tracing is off.
 */
export function acceptedInBackground(via: string, attributes: Attributes): string | null {
  if (!tracer) return null;
  const span = tracer.startSpan(`accept ${via}`, { kind: SpanKind.INTERNAL, attributes }, ROOT_CONTEXT);
  const traceparent = traceparentOf(trace.setSpan(ROOT_CONTEXT, span));
  span.end();
  return traceparent;
}

/** The trace id a stored `traceparent` carries (GET /runs/{id}'s `trace_id`). */
export function traceIdOf(traceparent: string | null): string | null {
  return traceparent?.split("-")[1] ?? null;
}

export { SpanKind };
