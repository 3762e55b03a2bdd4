import type { ManualTriggerSettings, ScheduleSettings, TriggerSettings, WebhookTriggerSettings } from "@platform/db";
import { z } from "zod";
import type { Same } from "../same-shape.ts";
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

/**
 * A flow's trigger as clients write and read it: a webhook (the default), a schedule or
 * manual. What a save stores is a stored shape (`TriggerSettings`, @platform/db): the
 * input's transform returns it, with the signing secret apart (it is sealed, never stored
 * here), and the output answers it.
 */

export const MAX_EVENTS = 100;
/** Stripe retries a delivery for up to three days: remember delivery ids that long by default. */
export const DEFAULT_DEDUP_WINDOW_S = 72 * 3600;
const MAX_DEDUP_WINDOW_S = 30 * 24 * 3600;

const eventType = z
  .string()
  .min(1, { error: "must not be empty" })
  .max(MAX_EVENT_TYPE_LENGTH, { error: `must be at most ${MAX_EVENT_TYPE_LENGTH} characters` });

const responseMode = z
  .enum(["acknowledge", "wait"])
  .meta({ description: "`acknowledge` (default): 200 at once; `wait`: the answer follows the end of the run." });

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
export const triggerInput = (secretRequired: boolean) =>
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
        .transform((trigger): { settings: TriggerSettings; signingSecret: string | null } => {
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

/** A trigger as a save reads it: the settings to store, and the secret sent with it, if any (write-only). */
export type TriggerInput = z.output<ReturnType<typeof triggerInput>>;

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

export const triggerOutput = z
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

/** The output answers each stored trigger as it is stored (a schedule with its next ticks besides). */
type TriggerOutput = z.output<typeof triggerOutput>;
const _triggerOutputIsStored: [
  Same<Extract<TriggerOutput, { type: "webhook" }>, WebhookTriggerSettings>,
  Same<Omit<Extract<TriggerOutput, { type: "schedule" }>, "next_fire_times">, ScheduleSettings>,
  Same<Extract<TriggerOutput, { type: "manual" }>, ManualTriggerSettings>,
] = [true, true, true];
