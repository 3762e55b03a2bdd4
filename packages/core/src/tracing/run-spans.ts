import { context, type Span } from "@opentelemetry/api";
import { idTime } from "@platform/db";
import { dataAttribute, type Redact, recordsRunData, withRunData } from "./run-data.ts";
import { contextOf, inSpan, pastSpan, SpanKind, tracingOn } from "./spans.ts";

/**
 * The spans of a delivery that executes a run, in the worker: children of the run's
 * acceptance span (its stored `traceparent`), so every delivery of a run, resumed after a
 * delay or an event, joins the one trace. A run that had begun no step first shows its time
 * in the queue (`queued`, from its acceptance to this delivery). When the `run` span records,
 * `showsData` is asked whether the run's account shows its data in its spans (run-data.ts);
 * it is not asked otherwise. A run executed in place by the process that accepted it
 * (engine/in-place.ts, `delivery` null) was never queued: its `run` span says so instead.
 */
export function traceRun<T>(
  run: { id: string; flowId: string; traceparent: string | null; steps: Record<string, unknown> },
  delivery: number | null,
  showsData: () => Promise<boolean>,
  work: () => Promise<T>,
  errorOf: (result: T) => string | null,
): Promise<T> {
  if (!tracingOn() || !run.traceparent) return work();
  const parent = contextOf(run.traceparent);
  const ids = { "platform.run.id": run.id, "platform.flow.id": run.flowId };
  const attributes =
    delivery === null ? { ...ids, "platform.run.in_place": true } : { ...ids, "platform.run.delivery": delivery };
  if (delivery !== null && Object.keys(run.steps).length === 0) pastSpan("queued", parent, idTime(run.id), attributes);
  const traced = async (span: Span | undefined) =>
    // A setting that cannot be read shows nothing: the run goes on without its data in its spans.
    span?.isRecording() && (await showsData().catch(() => false))
      ? context.with(withRunData(context.active(), span), work)
      : work();
  return inSpan("run", { kind: SpanKind.CONSUMER, attributes, parent }, traced, errorOf);
}

/**
 * A step's span (a task, or a control step around its lists), ended with its outcome; one
 * that is `done` carries its output (`redact`ed) when its run's account shows its data.
 */
export function traceStep<T extends { kind: string; output?: unknown }>(
  step: { name: string; subject: string },
  key: string,
  redact: Redact,
  work: () => Promise<T>,
): Promise<T> {
  if (!tracingOn()) return work();
  const attributes = {
    "platform.step.name": step.name,
    "platform.step.key": key,
    "platform.step.subject": step.subject,
  };
  const traced = async (span: Span | undefined) => {
    const outcome = await work();
    if (outcome.kind === "done" && recordsRunData(span)) {
      span.setAttribute("platform.step.output", dataAttribute(outcome.output, redact));
    }
    return outcome;
  };
  return inSpan(`step ${step.name}`, { attributes }, traced, failedText);
}

/** One attempt of a task (its number, from 1): a failure it throws ends its span with `describe`'s (redacted) text. */
export function traceAttempt<T>(
  task: { name: string; subject: string },
  attempt: number,
  describe: (error: unknown) => string,
  work: () => Promise<T>,
): Promise<T> {
  if (!tracingOn()) return work();
  const attributes = {
    "platform.step.name": task.name,
    "platform.step.subject": task.subject,
    "platform.step.attempt": attempt,
  };
  return inSpan(`attempt ${attempt}`, { attributes, describe }, work);
}

/** An item of a `for_each`: its index, under the step's span. */
export function traceItem<T extends { kind: string }>(step: string, index: number, work: () => Promise<T>): Promise<T> {
  if (!tracingOn()) return work();
  return inSpan(
    `item ${index}`,
    { attributes: { "platform.step.name": step, "platform.step.item": index } },
    work,
    failedText,
  );
}

const failedText = (outcome: { kind: string; error?: string }) =>
  outcome.kind === "failed" ? (outcome.error ?? "failed") : null;
