import { describe, expect, test } from "bun:test";
import { controlFacts } from "./flow-controls.ts";

const none = {
  start_timeout_s: null,
  rate_limit: null,
  singleton: null,
  debounce: null,
  batch: null,
  throttle: null,
  concurrency: null,
  priority: null,
};

describe("the flow page's flow controls", () => {
  test("a flow without controls lists none", () => {
    expect(controlFacts(none)).toEqual([]);
  });

  test("each control set is listed in words, in the order the controls apply", () => {
    expect(
      controlFacts({
        concurrency: { limit: 5 },
        priority: { run: "{{trigger.vip ? 300 : 0}}" },
        throttle: { limit: 100, period_s: 60, key: "{{trigger.customer}}" },
        singleton: { key: "{{trigger.customer}}", mode: "cancel" },
        rate_limit: { limit: 10, period_s: 60 },
        start_timeout_s: 300,
        debounce: { period_s: 30, timeout_s: 300, key: "{{trigger.company}}" },
        batch: { max_items: 100, timeout_s: 60 },
      }),
    ).toEqual([
      { label: "Start timeout", text: "cancelled if not started within 300 s" },
      { label: "Rate limit", text: "10 starts per 60 s; the others are skipped" },
      { label: "Singleton", text: "one run at a time per {{trigger.customer}}; a new start cancels the run under way" },
      {
        label: "Debounce",
        text: "runs after 30 s of quiet per {{trigger.company}}, at most 300 s; a later start replaces a waiting one",
      },
      { label: "Batch", text: "up to 100 starts or 60 s run as one" },
      { label: "Throttle", text: "100 starts per 60 s per {{trigger.customer}}; the others wait" },
      { label: "Concurrency", text: "5 at once" },
      {
        label: "Priority",
        text: "a run waiting for a slot moves ahead by {{trigger.vip ? 300 : 0}} seconds (-600 to 600)",
      },
    ]);
    expect(controlFacts({ ...none, singleton: { mode: "skip" } })).toEqual([
      { label: "Singleton", text: "one run at a time; a new start is skipped" },
    ]);
  });
});
