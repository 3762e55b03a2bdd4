import { type Context, context, createContextKey, type Span } from "@opentelemetry/api";
import { tracingOn } from "./spans.ts";

/**
 * A run's data in its spans, for an account that turned it on (`trace_run_data`, off by
 * default): its trigger on its `run` span, each succeeded step's output on the step's span,
 * as JSON redacted of the secrets the run read (as its error texts are) and cut to
 * TRACE_DATA_MAX_CHARS. Nothing is serialized unless the span records and the account opted in.
 */

/** Most characters of JSON an attribute of a run's data holds; a longer one is cut, and ends in `…`. */
export const TRACE_DATA_MAX_CHARS = 4096;

/** Redacts a text of the run's (run-secrets.ts): `cut` says the text was cut and may end inside a secret. */
export type Redact = (text: string, cut?: boolean) => string;

/** Set in the context of a `run` span whose data is recorded: that span. */
const RUN_DATA = createContextKey("platform run data");

/** `active` with the run's data recorded in `span` and its steps' spans. */
export function withRunData(active: Context, span: Span): Context {
  return active.setValue(RUN_DATA, span);
}

/** The `run` span that records the data of the run under way, if its account shows its data. */
const runDataSpan = () => context.active().getValue(RUN_DATA) as Span | undefined;

/** Whether `span` (a step's) is to carry its output: it records, and its run's account shows its data. */
export const recordsRunData = (span: Span | undefined): span is Span =>
  span !== undefined && runDataSpan() !== undefined && span.isRecording();

/** `value` as an attribute: its JSON, redacted and cut to TRACE_DATA_MAX_CHARS. */
export function dataAttribute(value: unknown, redact: Redact): string {
  let json: string;
  try {
    json = JSON.stringify(value ?? null);
  } catch {
    return "(not JSON)";
  }
  // A long text is cut before it is redacted (it may be as large as an output can be): the
  // redaction then drops an end that may begin a secret's value.
  const clean = json.length > TRACE_DATA_MAX_CHARS ? redact(json.slice(0, TRACE_DATA_MAX_CHARS), true) : redact(json);
  return json.length > TRACE_DATA_MAX_CHARS || clean.length > TRACE_DATA_MAX_CHARS
    ? `${clean.slice(0, TRACE_DATA_MAX_CHARS)}…`.toWellFormed()
    : clean;
}

/**
 * Sets the run's trigger on its `run` span, when its account shows its data; called as the
 * delivery's execution ends, so that every secret the run read by then is redacted.
 */
export function recordTrigger(trigger: unknown, redact: Redact): void {
  if (!tracingOn()) return;
  const span = runDataSpan();
  if (span?.isRecording()) span.setAttribute("platform.run.trigger", dataAttribute(trigger, redact));
}
