import { z } from "zod";
import { BUILT_IN_SUBJECTS } from "../built-in-functions.ts";
import { addSubjectPayloadIssues, NODE_OPTION_LIMITS, nodePayloadInput } from "../hub/nodes/schemas.ts";
import { uuidParam } from "../schemas.ts";
import {
  deliveryIdField,
  hmacConfig,
  MAX_EVENT_TYPE_LENGTH,
  refineWebhookSecurity,
  webhookAccess,
  webhookSecurityShape,
  webhookService,
} from "../webhooks/index.ts";
import { STEP_OPTION_DEFAULTS } from "./step-defaults.ts";

/**
 * A flow as clients write and read it (`../shared/design/api.md`, "Flows and runs"):
 * a webhook trigger and ordered steps, each a node template reference or an inline node.
 * Rules that need more than one step, or the database, are checked by `steps.ts`.
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

export interface NodeStepInput {
  name: string;
  node: string;
}

export interface InlineStepInput {
  name: string;
  node_type: "function";
  subject: (typeof BUILT_IN_SUBJECTS)[number];
  payload: Record<string, unknown>;
  options: z.infer<typeof stepOptions>;
}

export type StepInput = NodeStepInput | InlineStepInput;

const INLINE_ONLY = ["node_type", "subject", "payload", "options"] as const;

/**
 * One object for both kinds of step, so a mistake is named by its field: with `node` it is
 * a reference and takes nothing else; without, `subject` is required. The payload gets the
 * node templates' checks (size, template syntax), each problem under its own field.
 */
const stepInput = z
  .strictObject({
    name: stepName,
    node: nodeReference.optional(),
    node_type: z.literal("function", { error: 'must be "function"' }).optional(),
    subject: subject.optional(),
    payload: z.record(z.string(), z.unknown()).optional().meta({
      description:
        "Free-form JSON object (at most 64 KiB as JSON). String values may hold `{{trigger.<path>}}`, `{{steps.<name>.<path>}}` (an earlier step) and `{{secrets.<key>}}`; `\\{{` is a literal `{{`.",
    }),
    options: stepOptions.optional(),
  })
  .transform((step, ctx): StepInput => {
    if (step.node !== undefined) {
      for (const field of INLINE_ONLY) {
        if (step[field] !== undefined) {
          ctx.addIssue({
            code: "custom",
            path: [field],
            message: "is not used with node: a node reference is only name and node",
          });
        }
      }
      return { name: step.name, node: step.node.toLowerCase() };
    }
    if (step.subject === undefined) {
      ctx.addIssue({ code: "custom", path: ["subject"], message: "is required (or node: a node template's subject)" });
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
    };
  })
  .meta({
    description:
      'A node template reference `{"name", "node": "nodes.<id>"}` (resolved when the flow is saved: the revision runs the node as it was then), or an inline node `{"name", "node_type": "function", "subject", "payload", "options"}`.',
  });

const eventType = z
  .string()
  .min(1, { error: "must not be empty" })
  .max(MAX_EVENT_TYPE_LENGTH, { error: `must be at most ${MAX_EVENT_TYPE_LENGTH} characters` });

const responseMode = z
  .enum(["acknowledge", "wait"])
  .meta({ description: "`acknowledge` (default): 200 at once; `wait`: the answer follows the end of the run." });

/** The trigger as stored and returned: everything but the signing secret. */
export interface TriggerSettings {
  type: "webhook";
  events: string[];
  response_mode: "acknowledge" | "wait";
  access: z.infer<typeof webhookAccess>;
  service: z.infer<typeof webhookService> | null;
  hmac: z.infer<typeof hmacConfig> | null;
  delivery_id_field: string | null;
  /** Seconds a delivery id is remembered: a repeat within them starts no second run. */
  dedup_window_s: number;
}

export interface TriggerInput {
  settings: TriggerSettings;
  /** The secret sent with this save, if any (write-only). */
  signingSecret: string | null;
}

/** `secretRequired: false` on update: a flow that keeps signature access may keep its stored secret. */
const triggerInput = (secretRequired: boolean) =>
  z
    .strictObject({
      type: z.literal("webhook", { error: 'must be "webhook"' }).default("webhook"),
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
    })
    .superRefine(refineWebhookSecurity({ secretRequired }))
    .transform(
      (trigger): TriggerInput => ({
        settings: {
          type: trigger.type,
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
      }),
    )
    .prefault({})
    .meta({
      description:
        "The webhook trigger; absent, a public one in acknowledge mode for every event. `signing_secret` is write-only and sealed at rest.",
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
  });

export const createFlowInput = flowFields(true);
export type FlowInput = z.infer<typeof createFlowInput>;

export const flowIdInput = z.object({ id: uuidParam("Id of the flow (a UUID).") });

export const updateFlowInput = flowIdInput.extend(flowFields(false).shape);

const triggerOutput = z
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
  .meta({ id: "FlowTrigger", description: "The trigger; its signing secret is never returned." });

const nodeStepOutput = z.object({ name: z.string(), node: z.string() }).meta({ id: "FlowNodeStep" });

const inlineStepOutput = z
  .object({
    name: z.string(),
    node_type: z.literal("function"),
    subject,
    payload: z.record(z.string(), z.unknown()),
    options: z.object({ timeout: z.number().int(), attempts: z.number().int(), backoff_ms: z.number().int() }),
  })
  .meta({ id: "FlowInlineStep" });

export const flow = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string(),
    active: z.boolean(),
    trigger: triggerOutput,
    steps: z.array(z.union([nodeStepOutput, inlineStepOutput])).meta({ description: "The steps as saved." }),
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
