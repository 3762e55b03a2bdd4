import { parseJson } from "../ui/json-field.ts";

/** The editable parts of a flow, as the editor's form holds them. */
export interface FlowForm {
  name: string;
  description: string;
  active: boolean;
  triggerType: "webhook" | "schedule" | "manual";
  responseMode: "acknowledge" | "wait";
  access: "public" | "api_key" | "signature";
  service: string;
  signingSecret: string;
  cron: string;
  timezone: string;
  catchUp: "skip" | "latest";
  /** The steps as the person types them: JSON text. */
  stepsText: string;
}

export const EXAMPLE_STEPS = [{ name: "greet", subject: "transform", payload: { received: "{{trigger}}" } }];

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

/** A saved flow's trigger, as `GET /flows/{id}` answers it (only what the form edits is read). */
export interface SavedTrigger {
  type: "webhook" | "schedule" | "manual";
  response_mode?: "acknowledge" | "wait";
  access?: string;
  service?: string | null;
  cron?: string;
  timezone?: string;
  catch_up?: "skip" | "latest";
  [field: string]: unknown;
}

export function formOf(flow: {
  name: string;
  description: string;
  active: boolean;
  trigger: SavedTrigger;
  steps: unknown[];
}): FlowForm {
  const t = flow.trigger;
  return {
    ...emptyForm,
    name: flow.name,
    description: flow.description,
    active: flow.active,
    triggerType: t.type,
    responseMode: t.response_mode ?? "acknowledge",
    access: (t.access as FlowForm["access"]) ?? "public",
    service: t.service ?? "stripe",
    cron: t.cron ?? emptyForm.cron,
    timezone: t.timezone ?? "UTC",
    catchUp: t.catch_up ?? "skip",
    stepsText: JSON.stringify(flow.steps, null, 2),
  };
}

/** The steps text as JSON, or why it is not JSON. */
export function parseSteps(text: string): { steps: unknown } | { error: string } {
  const parsed = parseJson(text);
  return "value" in parsed ? { steps: parsed.value } : parsed;
}

/**
 * A saved flow, as `GET /flows/{id}` answers it. `PUT` replaces the whole definition, so what
 * the form does not edit (failure steps, concurrency, throttle) is sent back as it was.
 */
export interface SavedFlow {
  id: string;
  trigger: SavedTrigger;
  on_failure?: unknown[];
  concurrency?: unknown;
  throttle?: unknown;
}

/**
 * The body `POST /flows` (or, with `saved`, `PUT /flows/{id}`) takes. Trigger settings the
 * form does not show (event types, a custom HMAC, de-duplication) are kept as saved, and so
 * are the flow's failure steps, concurrency and throttle.
 */
export function draftOf(form: FlowForm, steps: unknown, saved?: SavedFlow) {
  let trigger: Record<string, unknown>;
  if (form.triggerType === "schedule") {
    trigger = { type: "schedule", cron: form.cron, timezone: form.timezone, catch_up: form.catchUp };
  } else if (form.triggerType === "manual") {
    trigger = { type: "manual" };
  } else {
    const kept = saved?.trigger.type === "webhook" ? saved.trigger : {};
    const { type: _type, service: _service, hmac, delivery_id_field, ...rest } = kept as SavedTrigger;
    trigger = {
      ...rest,
      ...(hmac ? { hmac } : {}),
      ...(delivery_id_field ? { delivery_id_field } : {}),
      type: "webhook",
      response_mode: form.responseMode,
      access: form.access,
      ...(form.access === "signature" ? { service: form.service } : {}),
      ...(form.signingSecret ? { signing_secret: form.signingSecret } : {}),
    };
  }
  const kept: Partial<Omit<SavedFlow, "trigger">> = saved
    ? {
        id: saved.id,
        ...(saved.on_failure !== undefined ? { on_failure: saved.on_failure } : {}),
        ...(saved.concurrency !== undefined ? { concurrency: saved.concurrency } : {}),
        ...(saved.throttle !== undefined ? { throttle: saved.throttle } : {}),
      }
    : {};
  return { ...kept, name: form.name, description: form.description, active: form.active, trigger, steps };
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
