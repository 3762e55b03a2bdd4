import type { RouterOutputs } from "@platform/client";

type SavedFlowAnswer = RouterOutputs["flows"]["get"]["data"];

/** A flow control the flow has, as the flow page lists it: its setting's name and what it does, in words. */
export interface ControlFact {
  label: string;
  text: string;
}

const perKey = (key: string | undefined) => (key === undefined ? "" : ` per ${key}`);

/**
 * The flow's controls that are set, in the order they apply (docs/guide/flows.md, "Flow
 * control"); one without a setting is left out.
 */
export function controlFacts(
  flow: Pick<
    SavedFlowAnswer,
    "start_timeout_s" | "rate_limit" | "singleton" | "debounce" | "batch" | "throttle" | "concurrency" | "priority"
  >,
): ControlFact[] {
  const facts: ControlFact[] = [];
  const { start_timeout_s: startTimeout, rate_limit: rate, singleton, debounce, batch, throttle, concurrency } = flow;
  if (startTimeout !== null) {
    facts.push({ label: "Start timeout", text: `cancelled if not started within ${startTimeout} s` });
  }
  if (rate !== null) {
    facts.push({
      label: "Rate limit",
      text: `${rate.limit} starts per ${rate.period_s} s${perKey(rate.key)}; the others are skipped`,
    });
  }
  if (singleton !== null) {
    const then = singleton.mode === "skip" ? "a new start is skipped" : "a new start cancels the run under way";
    facts.push({ label: "Singleton", text: `one run at a time${perKey(singleton.key)}; ${then}` });
  }
  if (debounce !== null) {
    const bound = debounce.timeout_s === undefined ? "" : `, at most ${debounce.timeout_s} s`;
    facts.push({
      label: "Debounce",
      text: `runs after ${debounce.period_s} s of quiet${perKey(debounce.key)}${bound}; a later start replaces a waiting one`,
    });
  }
  if (batch !== null) {
    facts.push({
      label: "Batch",
      text: `up to ${batch.max_items} starts or ${batch.timeout_s} s${perKey(batch.key)} run as one`,
    });
  }
  if (throttle !== null) {
    facts.push({
      label: "Throttle",
      text: `${throttle.limit} starts per ${throttle.period_s} s${perKey(throttle.key)}; the others wait`,
    });
  }
  if (concurrency !== null) {
    facts.push({ label: "Concurrency", text: `${concurrency.limit} at once${perKey(concurrency.key)}` });
  }
  if (flow.priority !== null) {
    facts.push({
      label: "Priority",
      text: `a run waiting for a slot moves ahead by ${flow.priority.run} seconds (-600 to 600)`,
    });
  }
  return facts;
}
