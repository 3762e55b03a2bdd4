import { describe, expect, test } from "bun:test";
import {
  describePath,
  draftOf,
  EXAMPLE_STEPS,
  emptyForm,
  type FlowDraft,
  type FlowForm,
  formOf,
  parseSteps,
  type SavedTrigger,
} from "./flow-draft.ts";

const STEPS = [
  { name: "charge", subject: "http.request", payload: { url: "https://pay.example/charge" } },
] satisfies FlowDraft["steps"];

/** A webhook trigger as `GET /flows/{id}` answers it, with settings the form does not show. */
const SAVED_WEBHOOK = {
  type: "webhook" as const,
  events: ["order.paid"],
  response_mode: "wait" as const,
  access: "signature",
  service: "github",
  hmac: { header: "X-Sig", algorithm: "sha256", encoding: "hex" },
  delivery_id_field: "headers.x-delivery",
  dedup_window_s: 600,
} satisfies SavedTrigger;

const ON_FAILURE = [
  { name: "alert", subject: "transform", payload: { failed: "{{error.step}}" } },
] satisfies FlowDraft["steps"];

const savedFlow = {
  id: "0194e0d0-0000-7000-8000-000000000001",
  name: "Orders",
  description: "charges paid orders",
  active: false,
  trigger: SAVED_WEBHOOK,
  steps: STEPS,
  on_failure: ON_FAILURE,
  concurrency: { limit: 2, key: "{{trigger.body.customer}}" },
  throttle: null,
  rate_limit: { limit: 10, period_s: 60 },
  singleton: { key: "{{trigger.body.customer}}", mode: "cancel" as const },
  start_timeout_s: null,
  debounce: { period_s: 30, key: "{{trigger.body.customer}}" },
  batch: null,
  mcp: {
    tool: "charge_order",
    description: "charges an order",
    input_schema: { type: "object", properties: { id: { type: "string" } } },
    output_schema: null,
  },
  webhook: { id: "abc", url: "http://localhost/webhooks/abc" },
  revision: 3,
};

const form = (changes: Partial<FlowForm>): FlowForm => ({ ...emptyForm, ...changes });

describe("a new flow's draft", () => {
  test("the empty form saves a public webhook flow with the example steps", () => {
    const parsed = parseSteps(emptyForm.stepsText);
    expect(parsed).toEqual({ steps: EXAMPLE_STEPS });
    expect(draftOf(form({ name: "hello" }), EXAMPLE_STEPS)).toEqual({
      name: "hello",
      description: "",
      active: true,
      trigger: { type: "webhook", response_mode: "acknowledge", access: "public" },
      steps: EXAMPLE_STEPS,
    });
  });

  test("a signed webhook sends its service and the secret typed, and no service otherwise", () => {
    const signed = form({ name: "gh", access: "signature", service: "github", signingSecret: "s3cret" });
    expect(draftOf(signed, STEPS).trigger).toEqual({
      type: "webhook",
      response_mode: "acknowledge",
      access: "signature",
      service: "github",
      signing_secret: "s3cret",
    });
    // The service select keeps its value when access changes back; the body does not carry it.
    expect(draftOf({ ...signed, access: "api_key", signingSecret: "" }, STEPS).trigger).toEqual({
      type: "webhook",
      response_mode: "acknowledge",
      access: "api_key",
    });
  });

  test("a schedule sends its cron, time zone and catch-up, and no webhook field", () => {
    const draft = draftOf(
      form({ triggerType: "schedule", cron: "0 9 * * 1", timezone: "Europe/Berlin", catchUp: "latest" }),
      STEPS,
    );
    expect(draft.trigger).toEqual({
      type: "schedule",
      cron: "0 9 * * 1",
      timezone: "Europe/Berlin",
      catch_up: "latest",
    });
  });

  test("a manual flow's trigger is its type alone", () => {
    expect(draftOf(form({ triggerType: "manual", signingSecret: "left over" }), STEPS).trigger).toEqual({
      type: "manual",
    });
  });
});

describe("editing a saved flow", () => {
  test("the form shows what was saved, and saving it unchanged sends the same flow back", () => {
    const edited = formOf(savedFlow);
    expect(edited).toMatchObject({
      name: "Orders",
      description: "charges paid orders",
      active: false,
      triggerType: "webhook",
      responseMode: "wait",
      access: "signature",
      service: "github",
      signingSecret: "",
    });
    const parsed = parseSteps(edited.stepsText);
    expect(parsed).toEqual({ steps: STEPS });
    // `PUT` replaces the whole flow. Event types, the custom HMAC, the delivery id, the
    // de-duplication window, the failure steps, the flow controls and the MCP tool are not on the form:
    // they are sent as saved. An empty secret field sends no secret, so the saved one stays.
    expect(draftOf(edited, STEPS, savedFlow)).toEqual({
      id: savedFlow.id,
      on_failure: ON_FAILURE,
      concurrency: { limit: 2, key: "{{trigger.body.customer}}" },
      throttle: null,
      rate_limit: { limit: 10, period_s: 60 },
      singleton: { key: "{{trigger.body.customer}}", mode: "cancel" },
      start_timeout_s: null,
      debounce: { period_s: 30, key: "{{trigger.body.customer}}" },
      batch: null,
      mcp: savedFlow.mcp,
      name: "Orders",
      description: "charges paid orders",
      active: false,
      trigger: {
        type: "webhook",
        events: ["order.paid"],
        dedup_window_s: 600,
        hmac: SAVED_WEBHOOK.hmac,
        delivery_id_field: "headers.x-delivery",
        response_mode: "wait",
        access: "signature",
        service: "github",
      },
      steps: STEPS,
    });
  });

  test("a saved webhook's null settings are not sent (the API takes them as absent)", () => {
    const saved = { ...savedFlow, trigger: { ...SAVED_WEBHOOK, hmac: null, delivery_id_field: null } };
    const draft = draftOf(formOf(saved), STEPS, saved);
    expect(draft.trigger).not.toHaveProperty("hmac");
    expect(draft.trigger).not.toHaveProperty("delivery_id_field");
  });

  test("a webhook flow turned into a schedule keeps none of its webhook settings", () => {
    const edited = { ...formOf(savedFlow), triggerType: "schedule" as const };
    expect(draftOf(edited, STEPS, savedFlow).trigger).toEqual({
      type: "schedule",
      cron: emptyForm.cron,
      timezone: "UTC",
      catch_up: "skip",
    });
  });

  test("a saved schedule shows its settings, and a webhook made of it keeps nothing of it", () => {
    const schedule = {
      ...savedFlow,
      trigger: { type: "schedule" as const, cron: "0 * * * *", timezone: "Asia/Tokyo", catch_up: "latest" as const },
    };
    const edited = formOf(schedule);
    expect(edited).toMatchObject({
      triggerType: "schedule",
      cron: "0 * * * *",
      timezone: "Asia/Tokyo",
      catchUp: "latest",
    });
    expect(draftOf(edited, STEPS, schedule).trigger).toEqual(schedule.trigger);
    expect(draftOf({ ...edited, triggerType: "webhook" }, STEPS, schedule).trigger).toEqual({
      type: "webhook",
      response_mode: "acknowledge",
      access: "public",
    });
  });
});

describe("the steps text", () => {
  test("text that is not JSON yet says why, and sends nothing", () => {
    const parsed = parseSteps('[{"name": "greet",');
    expect(parsed).not.toHaveProperty("steps");
    expect((parsed as { error: string }).error).toBeString();
    expect((parsed as { error: string }).error.length).toBeGreaterThan(0);
  });

  test("any JSON is sent as typed: the API names what is wrong with it", () => {
    expect(parseSteps('{"not": "a list"}')).toEqual({ steps: { not: "a list" } });
  });
});

describe("describePath", () => {
  const steps = [{ name: "fetch" }, { name: "charge" }, {}];

  test("a step's problem names the step by its number and name", () => {
    expect(describePath("steps.1.payload.url", steps)).toBe("Step 2 (“charge”): payload.url");
    expect(describePath("steps.0", steps)).toBe("Step 1 (“fetch”)");
    // The editor holds the steps, not the failure steps: a failure step is not given a step's name.
    expect(describePath("on_failure.0.payload", steps)).toBe("Failure step 1: payload");
  });

  test("a step without a name, or past the list, is named by its number alone", () => {
    expect(describePath("steps.2.subject", steps)).toBe("Step 3: subject");
    expect(describePath("steps.9", steps)).toBe("Step 10");
    expect(describePath("steps.0.subject", "not a list")).toBe("Step 1: subject");
  });

  test("a path outside the steps is shown as it is", () => {
    expect(describePath("trigger.cron", steps)).toBe("trigger.cron");
    expect(describePath("steps", steps)).toBe("steps");
  });
});
