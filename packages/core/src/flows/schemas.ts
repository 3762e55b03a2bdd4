import type { StepInput, TriggerSettings } from "@platform/db";
import { z } from "zod";
import { BUILT_IN_SUBJECTS } from "../built-in-functions.ts";
import { addSubjectPayloadIssues, NODE_OPTION_LIMITS, nodePayloadInput } from "../hub/nodes/schemas.ts";
import { respondPayloadProblems } from "../runs/tenant-answers.ts";
import { uuidParam } from "../schemas.ts";
import { inspectPayload } from "../templates/index.ts";
import {
  deliveryIdField,
  hmacConfig,
  MAX_EVENT_TYPE_LENGTH,
  refineWebhookSecurity,
  webhookAccess,
  webhookSecurityShape,
  webhookService,
} from "../webhooks/index.ts";
import { cronProblem, timezoneProblem } from "./schedules.ts";
import { STEP_OPTION_DEFAULTS } from "./step-defaults.ts";

/**
 * A flow as clients write and read it (`../shared/design/api.md`, "Flows and runs"):
 * a webhook trigger and ordered steps, each a node template reference or an inline node.
 * Rules that need more than one step, or the database, are checked by `steps.ts`.
 * What a save stores is a stored shape (@platform/db): the step and trigger transforms
 * return `StepInput` and `TriggerSettings`, and the output schemas accept them (`toFlow`).
 */

export const MAX_STEPS = 100;
export const MAX_EVENTS = 100;
/** Stripe retries a delivery for up to three days: remember delivery ids that long by default. */
export const DEFAULT_DEDUP_WINDOW_S = 72 * 3600;
const MAX_DEDUP_WINDOW_S = 30 * 24 * 3600;
/** Step names are what `{{steps.<name>}}` can name: one template path segment. */
const STEP_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const stepNameRule = "1-64 letters, digits, _ or -";
/** A node template's subject: `nodes.<uuid>`. */
const NODE_REFERENCE = /^nodes\.[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

const stepName = z
  .string()
  .regex(STEP_NAME, { error: `must be ${stepNameRule}` })
  .meta({
    description: `Unique in the flow; later steps read its output as \`{{steps.<name>...}}\`. ${stepNameRule}.`,
  });

const nodeReference = z
  .string()
  .regex(NODE_REFERENCE, { error: "must be a node template's subject: nodes.<id>" })
  .meta({ description: "A node template of the account, by its subject `nodes.<id>`." });

const subject = z
  .enum(BUILT_IN_SUBJECTS, { error: `must be one of ${BUILT_IN_SUBJECTS.join(", ")}` })
  .meta({ description: "The built-in function the step runs." });

const option = (name: keyof typeof NODE_OPTION_LIMITS, description: string) =>
  z
    .number()
    .int({ error: "must be a whole number" })
    .min(1, { error: "must be at least 1" })
    .max(NODE_OPTION_LIMITS[name], { error: `must be at most ${NODE_OPTION_LIMITS[name]}` })
    .default(STEP_OPTION_DEFAULTS[name])
    .meta({ description: `${description} (1-${NODE_OPTION_LIMITS[name]}; default ${STEP_OPTION_DEFAULTS[name]}).` });

const stepOptions = z.strictObject({
  timeout: option("timeout", "Milliseconds one attempt may take"),
  attempts: option("attempts", "Attempts in all, the first included"),
  backoff_ms: option("backoff_ms", "Milliseconds before the first retry, doubling (with jitter) for each next one"),
});

const INLINE_ONLY = ["node_type", "subject", "payload", "options"] as const;
/** The keys that make a step a control step; a step holds at most one. */
const CONTROL_KEYS = ["switch", "for_each", "parallel", "stop"] as const;
/** What belongs to one kind of step only, by kind. */
const KIND_ONLY: Record<string, readonly string[]> = {
  switch: ["default"],
  for_each: ["steps", "concurrency"],
};

/** How deep lists of steps may nest (a for-each in a switch case in a parallel branch is 3). */
export const MAX_NESTING = 8;
const MAX_CASES = 50;
const MAX_BRANCHES = 20;
const MAX_CONCURRENCY = 50;
const MAX_CONCURRENCY_LIMIT = 1000;
const MAX_THROTTLE_LIMIT = 100_000;
/** A throttle's longest period: a day. */
const MAX_THROTTLE_PERIOD_S = 86_400;

/** A template field (`if`, `when`, `for_each`): checked like payload strings. */
const templateField = (description: string) =>
  z
    .string()
    .min(1, { error: "must not be empty" })
    .max(4096, { error: "must be at most 4096 characters" })
    .superRefine((text, ctx) => {
      for (const problem of inspectPayload(text).problems) ctx.addIssue({ code: "custom", message: problem.message });
      if (!text.includes("{{")) ctx.addIssue({ code: "custom", message: "must hold a template: {{ expression }}" });
    })
    .meta({ description });

/**
 * A list of steps inside a step. Declared as a list of any JSON here (the OpenAPI document
 * stays free of recursion) and read by `stepList` in the step's transform, each problem
 * named by its full path.
 */
const nestedSteps = (description: string) =>
  z
    .array(z.unknown())
    .min(1, { error: "must hold at least one step" })
    .max(MAX_STEPS, { error: `must hold at most ${MAX_STEPS} steps` })
    .meta({ description: `${description} Each item is a step, shaped as the items of the flow's \`steps\`.` });

/** A `stop`'s answer: its headers are checked against the allow list as a `respond` step's are. */
const respondShape = z
  .strictObject({
    status: z.number().int().min(200).max(599).default(200),
    headers: z.record(z.string(), z.string()).default({}),
    body: z.unknown().optional(),
  })
  .superRefine((response, ctx) => {
    for (const problem of respondPayloadProblems(response)) {
      ctx.addIssue({ code: "custom", path: problem.field, message: problem.message });
    }
  });

/** Nesting of the lists being read (parsing is synchronous): bounds the recursion a hostile body could ask for. */
let nesting = 0;

/** Reads a nested list with the step schema, its problems reported under `path`. */
function readNested(list: unknown[], path: (string | number)[], ctx: z.RefinementCtx): StepInput[] | undefined {
  if (nesting >= MAX_NESTING) {
    ctx.addIssue({ code: "custom", path, message: `lists of steps nest at most ${MAX_NESTING} deep` });
    return undefined;
  }
  nesting += 1;
  try {
    const parsed = stepList.safeParse(list);
    if (parsed.success) return parsed.data;
    for (const issue of parsed.error.issues) {
      ctx.addIssue({
        code: "custom",
        path: [...path, ...issue.path.map((key) => key as string | number)],
        message: issue.message,
      });
    }
    return undefined;
  } finally {
    nesting -= 1;
  }
}

const stepShape = {
  name: stepName,
  node: nodeReference.optional(),
  node_type: z.literal("function", { error: 'must be "function"' }).optional(),
  subject: subject.optional(),
  payload: z.record(z.string(), z.unknown()).optional().meta({
    description:
      "Free-form JSON object (at most 64 KiB as JSON). String values may hold templates: `{{trigger.<path>}}`, `{{steps.<name>.<path>}}` (an earlier step), `{{secrets.<key>}}`, `{{run.id}}`, and inside a for-each `{{item}}`/`{{index}}`; anything else between the braces is a JSONata expression (`{{trigger.body.amount > 100}}`, `{{$sum(trigger.body.items.price)}}`). A string that is exactly one template keeps its value's type; `\\{{` is a literal `{{`.",
  }),
  options: stepOptions.optional(),
  if: templateField(
    'A condition: when its value is false, null, missing, 0, "" or [], the step is skipped (status `skipped`, output null).',
  ).optional(),
  catch: nestedSteps(
    "Steps run when this step fails after its retries, with `{{error.message}}` and `{{error.step}}` in scope; their last output becomes this step's and the run goes on.",
  ).optional(),
  switch: z
    .array(z.strictObject({ when: templateField("A condition (see `if`)."), steps: nestedSteps("The case's steps.") }))
    .min(1, { error: "must hold at least one case" })
    .max(MAX_CASES, { error: `must hold at most ${MAX_CASES} cases` })
    .optional()
    .meta({ description: "Ordered cases: the first whose `when` holds runs; the step's output is its last step's." }),
  default: nestedSteps("With `switch`: the steps run when no case holds.").optional(),
  for_each: templateField(
    "An array to iterate: its steps (`steps`) run once per item, `{{item}}` and `{{index}}` in scope.",
  ).optional(),
  steps: nestedSteps("With `for_each`: the steps run per item.").optional(),
  concurrency: z
    .number()
    .int({ error: "must be a whole number" })
    .min(1, { error: "must be at least 1" })
    .max(MAX_CONCURRENCY, { error: `must be at most ${MAX_CONCURRENCY}` })
    .optional()
    .meta({ description: `With \`for_each\`: items run at once (1-${MAX_CONCURRENCY}, default 1).` }),
  parallel: z
    .record(z.string().regex(STEP_NAME, { error: `a branch name must be ${stepNameRule}` }), nestedSteps("A branch."))
    .refine((branches) => Object.keys(branches).length >= 1, { error: "must name at least one branch" })
    .refine((branches) => Object.keys(branches).length <= MAX_BRANCHES, {
      error: `must name at most ${MAX_BRANCHES} branches`,
    })
    .optional()
    .meta({ description: "Named branches, all run at once; the output is an object of each branch's last output." }),
  stop: z
    .strictObject({
      output: z.unknown().optional().meta({ description: "The run's output (templates resolved)." }),
      response: respondShape.optional().meta({ description: "In wait mode: the HTTP answer (templates resolved)." }),
    })
    .optional()
    .meta({ description: "Ends the run here, `succeeded`." }),
};

type RawStep = z.infer<z.ZodObject<typeof stepShape>>;

/** The guards of a step (`if`, `catch`), the handler read as a nested list. */
function guards(step: RawStep, ctx: z.RefinementCtx) {
  const read: { if?: string; catch?: StepInput[] } = {};
  if (step.if !== undefined) read.if = step.if;
  if (step.catch !== undefined) {
    const handler = readNested(step.catch, ["catch"], ctx);
    if (handler) read.catch = handler;
  }
  return read;
}

/** A control step (the one control key it holds), its lists read as nested lists. */
function controlStep(step: RawStep, kind: (typeof CONTROL_KEYS)[number], ctx: z.RefinementCtx): StepInput {
  const base = { name: step.name, ...guards(step, ctx) };
  if (kind === "switch") {
    const cases = (step.switch ?? []).map((branch, index) => ({
      when: branch.when,
      steps: readNested(branch.steps, ["switch", index, "steps"], ctx) ?? [],
    }));
    const fallback = step.default === undefined ? undefined : readNested(step.default, ["default"], ctx);
    return { ...base, switch: cases, ...(fallback ? { default: fallback } : {}) };
  }
  if (kind === "for_each") {
    if (step.steps === undefined)
      ctx.addIssue({ code: "custom", path: ["steps"], message: "is required with for_each" });
    const steps = step.steps === undefined ? [] : (readNested(step.steps, ["steps"], ctx) ?? []);
    return { ...base, for_each: step.for_each as string, steps, concurrency: step.concurrency ?? 1 };
  }
  if (kind === "parallel") {
    const branches = Object.fromEntries(
      Object.entries(step.parallel ?? {}).map(([branch, steps]) => [
        branch,
        readNested(steps, ["parallel", branch], ctx) ?? [],
      ]),
    );
    return { ...base, parallel: branches };
  }
  if (step.catch !== undefined)
    ctx.addIssue({ code: "custom", path: ["catch"], message: "is not used with stop: a stop cannot fail" });
  return { name: step.name, ...(step.if === undefined ? {} : { if: step.if }), stop: step.stop ?? {} };
}

/**
 * One object for every kind of step, so a mistake is named by its field: with `node` it is
 * a reference and takes only the guards; with one of `switch`, `for_each`, `parallel` or
 * `stop` it is that control step; otherwise `subject` is required. The payload gets the
 * node templates' checks (size, template syntax), each problem under its own field.
 */
const stepInput = z
  .strictObject(stepShape)
  .transform((step, ctx): StepInput => {
    const kinds = CONTROL_KEYS.filter((key) => step[key] !== undefined);
    if (kinds.length > 1) {
      ctx.addIssue({
        code: "custom",
        path: [kinds[1] as string],
        message: `a step is one kind: ${kinds.join(" and ")} cannot be combined`,
      });
      return z.NEVER;
    }
    for (const [kind, keys] of Object.entries(KIND_ONLY)) {
      if (kinds[0] === kind) continue;
      for (const key of keys) {
        if (step[key as keyof RawStep] !== undefined) {
          ctx.addIssue({ code: "custom", path: [key], message: `is used with ${kind} only` });
        }
      }
    }
    const [kind] = kinds;
    if (kind !== undefined) {
      const taskFields = ["node", ...INLINE_ONLY].filter((field) => step[field as keyof RawStep] !== undefined);
      for (const field of taskFields) {
        ctx.addIssue({ code: "custom", path: [field], message: `is not used with ${kind}` });
      }
      return controlStep(step, kind, ctx);
    }
    if (step.node !== undefined) {
      for (const field of INLINE_ONLY) {
        if (step[field] !== undefined) {
          ctx.addIssue({
            code: "custom",
            path: [field],
            message: "is not used with node: a node reference is only name and node (and if, catch)",
          });
        }
      }
      return { name: step.name, node: step.node.toLowerCase(), ...guards(step, ctx) };
    }
    if (step.subject === undefined) {
      ctx.addIssue({
        code: "custom",
        path: ["subject"],
        message: "is required (or node: a node template's subject, or one of switch, for_each, parallel, stop)",
      });
      return z.NEVER;
    }
    const payload = nodePayloadInput.safeParse(step.payload);
    if (!payload.success) {
      for (const issue of payload.error.issues) {
        ctx.addIssue({ code: "custom", path: ["payload", ...issue.path.map(String)], message: issue.message });
      }
      return z.NEVER;
    }
    addSubjectPayloadIssues(step.subject, payload.data, ctx);
    return {
      name: step.name,
      node_type: "function",
      subject: step.subject,
      payload: payload.data,
      options: step.options ?? { ...STEP_OPTION_DEFAULTS },
      ...guards(step, ctx),
    };
  })
  .meta({
    description:
      'A step: a node template reference `{"name", "node": "nodes.<id>"}` (resolved when the flow is saved: the revision runs the node as it was then), an inline node `{"name", "node_type": "function", "subject", "payload", "options"}`, or a control step `{"name", "switch" | "for_each" | "parallel" | "stop": ...}`. Any step but `stop` may carry `if` and `catch`. Step names are unique in the whole flow.',
  });

const stepList = z.array(stepInput);

const eventType = z
  .string()
  .min(1, { error: "must not be empty" })
  .max(MAX_EVENT_TYPE_LENGTH, { error: `must be at most ${MAX_EVENT_TYPE_LENGTH} characters` });

const responseMode = z
  .enum(["acknowledge", "wait"])
  .meta({ description: "`acknowledge` (default): 200 at once; `wait`: the answer follows the end of the run." });

export interface TriggerInput {
  settings: TriggerSettings;
  /** The secret sent with this save, if any (write-only). */
  signingSecret: string | null;
}

/** Fields of a webhook trigger only: another type given one is a mistake, named. */
const WEBHOOK_ONLY = [
  "events",
  "response_mode",
  "access",
  "service",
  "signing_secret",
  "hmac",
  "delivery_id_field",
  "dedup_window_s",
] as const;
const SCHEDULE_ONLY = ["cron", "timezone", "catch_up"] as const;

/** Before defaults fill them in: a field given for another type of trigger is named as a mistake. */
function refuseOtherTypesFields(value: unknown, ctx: z.RefinementCtx) {
  if (value === null || typeof value !== "object") return value;
  const given = value as Record<string, unknown>;
  const type = given.type ?? "webhook";
  const foreign =
    type === "webhook" ? SCHEDULE_ONLY : type === "schedule" ? WEBHOOK_ONLY : [...WEBHOOK_ONLY, ...SCHEDULE_ONLY];
  for (const field of foreign) {
    if (given[field] !== undefined) {
      ctx.addIssue({ code: "custom", path: [field], message: `is not used with a ${String(type)} trigger` });
    }
  }
  return value;
}

/**
 * The trigger, one object for its three types so a mistake is named by its field: `webhook`
 * (the default; its fields below), `schedule` (`cron`, `timezone`, `catch_up`) or `manual`.
 * `secretRequired: false` on update: a flow that keeps signature access may keep its stored secret.
 */
const triggerInput = (secretRequired: boolean) =>
  z
    .preprocess(
      refuseOtherTypesFields,
      z
        .strictObject({
          type: z
            .enum(["webhook", "schedule", "manual"], { error: 'must be "webhook", "schedule" or "manual"' })
            .default("webhook")
            .meta({
              description:
                "`webhook` (default): deliveries to the flow's webhook URL start runs; `schedule`: `cron` starts them; `manual`: only `POST /flows/{id}/runs` does (every flow keeps that).",
            }),
          events: z
            .array(eventType)
            .max(MAX_EVENTS, { error: `must list at most ${MAX_EVENTS} event types` })
            .default([])
            .meta({ description: "Event types that start the flow; empty (the default) = every event." }),
          response_mode: responseMode.default("acknowledge"),
          ...webhookSecurityShape,
          delivery_id_field: deliveryIdField.nullish().meta({
            description:
              "Where the delivery id (for de-duplication) is read when the service defines none: a dot path into the body, e.g. `id`.",
          }),
          dedup_window_s: z
            .number()
            .int()
            .min(0)
            .max(MAX_DEDUP_WINDOW_S)
            .default(DEFAULT_DEDUP_WINDOW_S)
            .meta({
              description:
                "Seconds a delivery id is remembered (default 259200, 72 h; at most 30 days; 0 turns de-duplication off): " +
                "a delivery repeated within them starts no second run and is answered with the first run's id.",
            }),
          cron: z.string().max(200, { error: "must be at most 200 characters" }).optional().meta({
            description:
              "With `schedule`: five fields (minute hour day month weekday), or six with seconds first. Each tick starts exactly one run, however many workers run.",
          }),
          timezone: z
            .string()
            .max(100)
            .optional()
            .meta({ description: "With `schedule`: the IANA zone the expression is read in (default UTC)." }),
          catch_up: z.enum(["skip", "latest"], { error: 'must be "skip" or "latest"' }).optional().meta({
            description:
              "With `schedule`: a tick no worker was up for (started over a minute late) starts nothing (`skip`, the default) or one run for the latest missed tick (`latest`).",
          }),
        })
        .superRefine((trigger, ctx) => {
          if (trigger.type === "webhook") refineWebhookSecurity({ secretRequired })(trigger, ctx);
          if (trigger.type !== "schedule") return;
          const cronIssue =
            trigger.cron === undefined ? "is required with a schedule trigger" : cronProblem(trigger.cron);
          if (cronIssue) ctx.addIssue({ code: "custom", path: ["cron"], message: cronIssue });
          const zoneIssue = trigger.timezone === undefined ? null : timezoneProblem(trigger.timezone);
          if (zoneIssue) ctx.addIssue({ code: "custom", path: ["timezone"], message: zoneIssue });
        })
        .transform((trigger): TriggerInput => {
          if (trigger.type === "manual") return { settings: { type: "manual" }, signingSecret: null };
          if (trigger.type === "schedule") {
            return {
              settings: {
                type: "schedule",
                cron: trigger.cron as string,
                timezone: trigger.timezone ?? "UTC",
                catch_up: trigger.catch_up ?? "skip",
              },
              signingSecret: null,
            };
          }
          return {
            settings: {
              type: "webhook",
              // Listed twice filters the same: kept once, in the order given.
              events: [...new Set(trigger.events)],
              response_mode: trigger.response_mode,
              access: trigger.access,
              service: trigger.service ?? null,
              hmac: trigger.hmac ?? null,
              delivery_id_field: trigger.delivery_id_field ?? null,
              dedup_window_s: trigger.dedup_window_s,
            },
            signingSecret: trigger.signing_secret ?? null,
          };
        }),
    )
    .prefault({})
    .meta({
      description:
        "What starts the flow; absent, a public webhook in acknowledge mode for every event. `signing_secret` is write-only and sealed at rest.",
    });

/**
 * A flow's fields. `active` is piped so the REST adapter does not coerce it (`"false"`
 * would become true); the trigger's transform keeps the adapter out of its fields too.
 */
const flowFields = (secretRequired: boolean) =>
  z.object({
    name: z.string().min(1, { error: "must not be empty" }).max(200, { error: "must be at most 200 characters" }),
    description: z.string().max(2000, { error: "must be at most 2000 characters" }).default(""),
    active: z
      .boolean({ error: "must be true or false" })
      .default(true)
      .pipe(z.boolean())
      .meta({ description: "Whether deliveries to the webhook start runs (default true)." }),
    trigger: triggerInput(secretRequired),
    steps: z
      .array(stepInput)
      .min(1, { error: "must hold at least one step" })
      .max(MAX_STEPS, { error: `must hold at most ${MAX_STEPS} steps` }),
    concurrency: z
      .strictObject({
        limit: z
          .number()
          .int({ error: "must be a whole number" })
          .min(1, { error: "must be at least 1" })
          .max(MAX_CONCURRENCY_LIMIT, { error: `must be at most ${MAX_CONCURRENCY_LIMIT}` }),
        key: templateField(
          "Runs with the same value of this template share the limit (`{{trigger.body.customer_id}}`); absent, all the flow's runs do.",
        ).optional(),
      })
      .nullish()
      .transform((value) => value ?? null)
      .meta({
        description:
          "At most `limit` runs of the flow (per `key` value) execute at once, across every worker; the others wait `queued` (`queue_reason`: `waiting for concurrency slot`), oldest first, and are never dropped. A run parked on a delay or a wait gives its slot up until it goes on.",
      }),
    throttle: z
      .strictObject({
        limit: z
          .number()
          .int({ error: "must be a whole number" })
          .min(1, { error: "must be at least 1" })
          .max(MAX_THROTTLE_LIMIT, { error: `must be at most ${MAX_THROTTLE_LIMIT}` }),
        period_s: z
          .number()
          .int({ error: "must be a whole number" })
          .min(1, { error: "must be at least 1" })
          .max(MAX_THROTTLE_PERIOD_S, { error: `must be at most ${MAX_THROTTLE_PERIOD_S}` }),
        key: templateField(
          "Runs with the same value of this template share the throttle (`{{trigger.body.customer_id}}`); absent, all the flow's runs do.",
        ).optional(),
      })
      .nullish()
      .transform((value) => value ?? null)
      .meta({
        description:
          "At most `limit` runs of the flow (per `key` value) start in any `period_s` seconds, across every worker; the excess waits `queued` (`queue_reason`: `waiting for throttle window`) and starts, in order, as soon as the window allows: none is dropped. A run's turn is given when a worker first takes it; with a concurrency limit as well, a run whose turn came still waits for a slot.",
      }),
    on_failure: z
      .array(stepInput)
      .max(MAX_STEPS, { error: `must hold at most ${MAX_STEPS} steps` })
      .default([])
      .meta({
        description:
          "Steps run once when a run fails (for alerts), with `{{error.message}}` and `{{error.step}}` in scope; the run stays failed.",
      }),
  });

export const createFlowInput = flowFields(true);
export type FlowInput = z.infer<typeof createFlowInput>;

export const flowIdInput = z.object({ id: uuidParam("Id of the flow (a UUID).") });

export const updateFlowInput = flowIdInput.extend(flowFields(false).shape);

const webhookTriggerOutput = z
  .object({
    type: z.literal("webhook"),
    events: z.array(z.string()),
    response_mode: responseMode,
    access: webhookAccess,
    service: webhookService.nullable(),
    hmac: hmacConfig.nullable(),
    delivery_id_field: z.string().nullable(),
    dedup_window_s: z.number().int(),
  })
  .meta({ id: "FlowWebhookTrigger", description: "A webhook trigger; its signing secret is never returned." });

const triggerOutput = z
  .union([
    webhookTriggerOutput,
    z
      .object({
        type: z.literal("schedule"),
        cron: z.string(),
        timezone: z.string(),
        catch_up: z.enum(["skip", "latest"]),
        next_fire_times: z.array(z.string()).meta({
          description: "The next five ticks (ISO 8601, UTC); empty while the flow is inactive.",
        }),
      })
      .meta({ id: "FlowScheduleTrigger" }),
    z.object({ type: z.literal("manual") }).meta({ id: "FlowManualTrigger" }),
  ])
  .meta({ id: "FlowTrigger", description: "What starts the flow." });

const stepOutput = z.looseObject({ name: z.string() }).meta({
  id: "FlowStep",
  description:
    "A step as saved: a node reference `{name, node}`, an inline node `{name, node_type, subject, payload, options}` or a control step `{name, switch | for_each | parallel | stop}`, with `if` and `catch` when given. Defaults are filled in.",
});

export const flow = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string(),
    active: z.boolean(),
    trigger: triggerOutput,
    steps: z.array(stepOutput).meta({ description: "The steps as saved." }),
    on_failure: z.array(stepOutput).meta({ description: "The steps run once when a run fails, as saved." }),
    concurrency: z
      .object({ limit: z.number().int(), key: z.string().optional() })
      .nullable()
      .meta({ description: "How many of its runs execute at once (per key); null: no limit." }),
    throttle: z
      .object({ limit: z.number().int(), period_s: z.number().int(), key: z.string().optional() })
      .nullable()
      .meta({ description: "How many of its runs start per period (per key); null: no throttle." }),
    webhook: z
      .object({
        id: z.string().meta({ description: "Random and unguessable; replaced by regeneration." }),
        url: z.string().meta({ description: "{webhook_url}/<id>: where senders POST deliveries." }),
      })
      .meta({ description: "The flow's webhook endpoint." }),
    revision: z.number().int().meta({ description: "Counts saves from 1; a run records the revision it ran." }),
    created: z.number().int().meta({ description: "Unix seconds." }),
    modified: z
      .number()
      .int()
      .meta({ description: "When the flow was last saved or its webhook regenerated, Unix seconds." }),
  })
  .meta({ id: "Flow" });

export type Flow = z.infer<typeof flow>;

export const flowOutput = z.object({ data: flow });
