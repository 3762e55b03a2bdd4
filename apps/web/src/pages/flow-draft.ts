import type { RouterInputs, RouterOutputs, WebhookService } from "@platform/client";
import { parseJson, typedJson } from "../ui/json-field.ts";

/** A flow as `GET /flows/{id}` answers it. */
type SavedFlowAnswer = RouterOutputs["flows"]["get"]["data"];
type SavedTriggerAnswer = SavedFlowAnswer["trigger"];
type SavedWebhook = Extract<SavedTriggerAnswer, { type: "webhook" }>;
type SavedSchedule = Extract<SavedTriggerAnswer, { type: "schedule" }>;

type ScheduleSettings = Omit<SavedSchedule, "next_fire_times">;
type ManualTrigger = Extract<SavedTriggerAnswer, { type: "manual" }>;

/** A saved flow's trigger as the form reads it: the API's answer, less the next ticks it works out for a schedule. */
export type SavedTrigger = SavedWebhook | ScheduleSettings | ManualTrigger;

/**
 * A trigger as the API takes it: what it answers, with a webhook's defaulted settings left
 * out at will, its unset ones absent rather than null, and the write-only signing secret.
 * (tRPC types the trigger's input as `unknown`: the API reads it before it checks it.)
 */
export type TriggerInput = WebhookInput | ScheduleSettings | ManualTrigger;
type WebhookInput = Partial<Pick<SavedWebhook, "events" | "response_mode" | "access" | "dedup_window_s">> & {
  type: "webhook";
  service?: WebhookService;
  hmac?: NonNullable<SavedWebhook["hmac"]>;
  delivery_id_field?: string;
  signing_secret?: string;
};

/** The body `POST /flows` takes; with the saved flow's `id`, the one `PUT /flows/{id}` takes. */
export type FlowDraft = Omit<RouterInputs["flows"]["create"], "trigger"> & { id?: string; trigger: TriggerInput };

/** The editable parts of a flow, as the editor's form holds them. */
export interface FlowForm {
  name: string;
  description: string;
  active: boolean;
  triggerType: SavedTrigger["type"];
  responseMode: SavedWebhook["response_mode"];
  access: SavedWebhook["access"];
  service: WebhookService;
  signingSecret: string;
  cron: string;
  timezone: string;
  catchUp: SavedSchedule["catch_up"];
  /** The steps as the person types them: JSON text. */
  stepsText: string;
}

export const EXAMPLE_STEPS = [
  { name: "greet", subject: "transform", payload: { received: "{{trigger}}" } },
] satisfies FlowDraft["steps"];

export const emptyForm: FlowForm = {
  name: "",
  description: "",
  active: true,
  triggerType: "webhook",
  responseMode: "acknowledge",
  access: "public",
  service: "stripe",
  signingSecret: "",
  cron: "*/5 * * * *",
  timezone: "UTC",
  catchUp: "skip",
  stepsText: JSON.stringify(EXAMPLE_STEPS, null, 2),
};

/** What the form shows of a saved flow. */
export function formOf(
  flow: Pick<SavedFlowAnswer, "name" | "description" | "active" | "steps"> & { trigger: SavedTrigger },
): FlowForm {
  const t = flow.trigger;
  const form: FlowForm = {
    ...emptyForm,
    name: flow.name,
    description: flow.description,
    active: flow.active,
    triggerType: t.type,
    stepsText: JSON.stringify(flow.steps, null, 2),
  };
  if (t.type === "webhook") {
    return { ...form, responseMode: t.response_mode, access: t.access, service: t.service ?? emptyForm.service };
  }
  if (t.type === "schedule") return { ...form, cron: t.cron, timezone: t.timezone, catchUp: t.catch_up };
  return form;
}

/**
 * A saved trigger as the input that saves it unchanged: its settings, without what the API
 * adds to its answer (a schedule's next ticks, which the input refuses) or the null settings
 * (which the API takes as absent).
 */
export function triggerInputOf(trigger: SavedTrigger): TriggerInput {
  if (trigger.type === "manual") return { type: "manual" };
  if (trigger.type === "schedule") {
    return { type: "schedule", cron: trigger.cron, timezone: trigger.timezone, catch_up: trigger.catch_up };
  }
  return webhookInputOf(trigger);
}

function webhookInputOf(trigger: SavedWebhook): WebhookInput {
  const { service, hmac, delivery_id_field, ...settings } = trigger;
  return {
    ...settings,
    ...(service ? { service } : {}),
    ...(hmac ? { hmac } : {}),
    ...(delivery_id_field ? { delivery_id_field } : {}),
  };
}

/** The steps text as JSON, or why it is not JSON. */
export function parseSteps(text: string): { steps: unknown } | { error: string } {
  const parsed = parseJson(text);
  return "value" in parsed ? { steps: parsed.value } : parsed;
}

/**
 * A saved flow, as `GET /flows/{id}` answers it. `PUT` replaces the whole definition, so what
 * the form does not edit (failure steps, the flow controls, its MCP tool) is sent back as it was.
 */
export type SavedFlow = Partial<
  Pick<
    SavedFlowAnswer,
    | "on_failure"
    | "concurrency"
    | "priority"
    | "throttle"
    | "rate_limit"
    | "singleton"
    | "start_timeout_s"
    | "debounce"
    | "batch"
    | "mcp"
  >
> & {
  id: string;
  trigger: SavedTrigger;
};

/**
 * The body `POST /flows` (or, with `saved`, `PUT /flows/{id}`) takes. Trigger settings the
 * form does not show (event types, a custom HMAC, de-duplication) are kept as saved, and so
 * are the flow's failure steps, its flow controls and its MCP tool.
 */
export function draftOf(form: FlowForm, steps: unknown, saved?: SavedFlow): FlowDraft {
  let trigger: TriggerInput;
  if (form.triggerType === "schedule") {
    trigger = { type: "schedule", cron: form.cron, timezone: form.timezone, catch_up: form.catchUp };
  } else if (form.triggerType === "manual") {
    trigger = { type: "manual" };
  } else {
    const { service: _service, ...kept } =
      saved?.trigger.type === "webhook" ? webhookInputOf(saved.trigger) : { type: "webhook" as const };
    trigger = {
      ...kept,
      type: "webhook",
      response_mode: form.responseMode,
      access: form.access,
      ...(form.access === "signature" ? { service: form.service } : {}),
      ...(form.signingSecret ? { signing_secret: form.signingSecret } : {}),
    };
  }
  const kept: Omit<FlowDraft, "name" | "trigger" | "steps"> = saved
    ? {
        id: saved.id,
        ...(saved.on_failure !== undefined ? { on_failure: saved.on_failure } : {}),
        ...(saved.concurrency !== undefined ? { concurrency: saved.concurrency } : {}),
        ...(saved.priority !== undefined ? { priority: saved.priority } : {}),
        ...(saved.throttle !== undefined ? { throttle: saved.throttle } : {}),
        ...(saved.rate_limit !== undefined ? { rate_limit: saved.rate_limit } : {}),
        ...(saved.singleton !== undefined ? { singleton: saved.singleton } : {}),
        ...(saved.start_timeout_s !== undefined ? { start_timeout_s: saved.start_timeout_s } : {}),
        ...(saved.debounce !== undefined ? { debounce: saved.debounce } : {}),
        ...(saved.batch !== undefined ? { batch: saved.batch } : {}),
        ...(saved.mcp !== undefined ? { mcp: saved.mcp } : {}),
      }
    : {};
  return {
    ...kept,
    name: form.name,
    description: form.description,
    active: form.active,
    trigger,
    steps: typedJson(steps),
  };
}

/**
 * `steps.2.payload.code` → `Step 3 (“charge”): payload.code`, for a person reading the editor.
 * `steps` is what the editor holds; a failure step is named by its number alone.
 */
export function describePath(path: string, steps: unknown): string {
  const match = /^(steps|on_failure)\.(\d+)(?:\.(.*))?$/.exec(path);
  if (!match) return path;
  const index = Number(match[2]);
  const list = match[1] === "steps" && Array.isArray(steps) ? steps : [];
  const name = (list[index] as { name?: unknown } | undefined)?.name;
  const where = `${match[1] === "steps" ? "Step" : "Failure step"} ${index + 1}${typeof name === "string" ? ` (“${name}”)` : ""}`;
  return match[3] ? `${where}: ${match[3]}` : where;
}
