import type { ConcurrencyLimit, PriorityRule, RateLimit, Singleton, ThrottleLimit } from "@platform/db";
import { z } from "zod";
import { MAX_PRIORITY_S } from "../engine/priority.ts";
import { MAX_THROTTLE_PERIOD_S } from "../engine/throttle.ts";
import { mcpToolInput, mcpToolOutput } from "../mcp-server/tool-field.ts";
import type { Same } from "../same-shape.ts";
import { uuidParam } from "../schemas.ts";
import { batchInput, batchOutput, debounceInput, debounceOutput } from "./debounce-batch-schemas.ts";
import { MAX_STEPS, stepInput, stepOutput, templateField } from "./step-schemas.ts";
import { triggerInput, triggerOutput } from "./trigger-schemas.ts";

/**
 * A flow as clients write and read it (`../shared/design/api.md`, "Flows and runs"): its
 * trigger (trigger-schemas.ts), its steps and failure steps (step-schemas.ts), and how many
 * of its runs execute and start at once (`concurrency`, `throttle`). The router's inputs and
 * outputs; the types a save and a read use are inferred from them, the stored ones checked
 * against @platform/db's.
 */

const MAX_CONCURRENCY_LIMIT = 1000;
const MAX_THROTTLE_LIMIT = 100_000;
const MAX_RATE_LIMIT = 100_000;
/** A rate limit's longest period: a day. */
const MAX_RATE_PERIOD_S = 86_400;
/** The longest a run may be given to start: a week. */
const MAX_START_TIMEOUT_S = 604_800;

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
          "At most `limit` runs of the flow (per `key` value) execute at once, across every worker; the others wait `queued` (`queue_reason`: `waiting for concurrency slot`), oldest first (as `priority` moves them), and are never dropped. A run parked on a delay or a wait gives its slot up until it goes on.",
      }),
    priority: z
      .strictObject({
        run: templateField(
          `Gives the run's priority in seconds (\`{{trigger.body.plan = 'enterprise' ? 300 : 0}}\`), read when a worker first takes it: positive moves it ahead, negative behind. A number beyond ±${MAX_PRIORITY_S} counts as the bound; no value counts as 0; any other value fails the run (\`priority.run: must give a number of seconds, not "high"\`).`,
        ),
      })
      .nullish()
      .transform((value) => value ?? null)
      .meta({
        description: `Orders the runs waiting for a concurrency slot (it needs \`concurrency\`): each waits as if it had been accepted \`run\` seconds earlier (−${MAX_PRIORITY_S} to ${MAX_PRIORITY_S}), so a run of priority 60 goes before the runs of priority 0 accepted up to a minute before it. Only the slot queue is ordered: throttle turns, debounces and batches keep the order of acceptance, and a run holding a slot is never stopped for another.`,
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
    rate_limit: z
      .strictObject({
        limit: z
          .number()
          .int({ error: "must be a whole number" })
          .min(1, { error: "must be at least 1" })
          .max(MAX_RATE_LIMIT, { error: `must be at most ${MAX_RATE_LIMIT}` }),
        period_s: z
          .number()
          .int({ error: "must be a whole number" })
          .min(1, { error: "must be at least 1" })
          .max(MAX_RATE_PERIOD_S, { error: `must be at most ${MAX_RATE_PERIOD_S}` }),
        key: templateField(
          "Starts with the same value of this template share the rate limit (`{{trigger.body.customer_id}}`); absent, all the flow's starts do.",
        ).optional(),
      })
      .nullish()
      .transform((value) => value ?? null)
      .meta({
        description:
          'At most `limit` starts of the flow (per `key` value) are taken in any `period_s` seconds, counted by when they were accepted; the others are not queued but end `skipped`, with `end_reason` (`rate limited: 10 starts per 60 s for key "x"`). Every start is still answered with its run id. Unlike `throttle`, which delays the excess, a rate limit drops it: for senders that repeat themselves.',
      }),
    singleton: z
      .strictObject({
        key: templateField(
          "Runs with the same value of this template are one at a time (`{{trigger.body.customer_id}}`); absent, the whole flow is.",
        ).optional(),
        mode: z.enum(["skip", "cancel"], { error: 'must be "skip" or "cancel"' }).meta({
          description:
            "`skip`: a start that finds a run of its key queued or running ends `skipped`; `cancel`: it cancels that run (which ends `cancelled`, its `end_reason` and `taken_by` naming the start that replaced it; a step under way is stopped as `POST /runs/{id}/cancel` stops it) and goes on.",
        }),
      })
      .nullish()
      .transform((value) => value ?? null)
      .meta({
        description:
          "At most one run of the flow (per `key` value) is queued or running at a time, across every worker: see `mode` for what a start that finds one does. Decided when a worker first takes the start.",
      }),
    start_timeout_s: z
      .number({ error: "must be a whole number of seconds" })
      .int({ error: "must be a whole number of seconds" })
      .min(1, { error: "must be at least 1" })
      .max(MAX_START_TIMEOUT_S, { error: `must be at most ${MAX_START_TIMEOUT_S}` })
      .nullish()
      .transform((value) => value ?? null)
      .meta({
        description:
          "A run that has not started its first step this many seconds after it was accepted (behind a backlog, a concurrency limit, a throttle, a debounce or a batch) ends `cancelled` with `end_reason` (`waited more than 30 s to start (start_timeout_s)`) instead of acting on stale data. A run waiting on a flow control is woken by then to be cancelled on time.",
      }),
    debounce: debounceInput,
    batch: batchInput,
    mcp: mcpToolInput,
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
    priority: z
      .object({ run: z.string() })
      .nullable()
      .meta({ description: "The seconds by which each run moves ahead in the concurrency slot queue; null: none." }),
    throttle: z
      .object({ limit: z.number().int(), period_s: z.number().int(), key: z.string().optional() })
      .nullable()
      .meta({ description: "How many of its runs start per period (per key); null: no throttle." }),
    rate_limit: z
      .object({ limit: z.number().int(), period_s: z.number().int(), key: z.string().optional() })
      .nullable()
      .meta({
        description: "How many of its starts are taken per period (per key), the others skipped; null: no rate limit.",
      }),
    singleton: z
      .object({ key: z.string().optional(), mode: z.enum(["skip", "cancel"]) })
      .nullable()
      .meta({ description: "One queued or running run per key, and what a start that finds one does; null: none." }),
    start_timeout_s: z
      .number()
      .int()
      .nullable()
      .meta({ description: "Seconds a run may wait to start before it is cancelled; null: no start timeout." }),
    debounce: debounceOutput,
    batch: batchOutput,
    mcp: mcpToolOutput,
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

/** A flow's limits are answered as they are stored. */
const _limitsAreStored: [
  Same<Flow["concurrency"], ConcurrencyLimit | null>,
  Same<Flow["throttle"], ThrottleLimit | null>,
  Same<Flow["priority"], PriorityRule | null>,
  Same<Flow["rate_limit"], RateLimit | null>,
  Same<Flow["singleton"], Singleton | null>,
] = [true, true, true, true, true];
