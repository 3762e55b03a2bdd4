import { z } from "zod";
import { LIMITS, type LimitName } from "../../limits/plans.ts";
import { accountUsage } from "../../limits/usage.ts";
import { withCredential } from "../../schemas.ts";
import { router } from "../../trpc.ts";
import { op } from "./shared.ts";

/** What the LIMITS table says of each limit, as the enums of its fields (the table is the one list). */
const limitNames = Object.keys(LIMITS) as [LimitName, ...LimitName[]];
const limitField = <F extends "unit" | "per">(field: F) =>
  [...new Set(Object.values(LIMITS).map((limit) => limit[field]))] as [
    (typeof LIMITS)[LimitName][F],
    ...(typeof LIMITS)[LimitName][F][],
  ];

const limitUsage = z
  .object({
    name: z.enum(limitNames),
    limit: z.number().int(),
    used: z.number().int(),
    unit: z.enum(limitField("unit")),
    per: z.enum(limitField("per")),
    of: z
      .string()
      .optional()
      .meta({ description: "For a limit per stream or flow: the one nearest it (a stream's name, a flow's id)." }),
  })
  .meta({ id: "LimitUsage" });

/** `accounts.usage`: the account's plan, its limits, and its use of each. */
export const usageRouter = router({
  get: op
    .authed({
      method: "GET",
      path: "/accounts/usage",
      summary: "The account's limits and its use of each",
      description: [
        "Limits come from the account's plan (`subscription_status`; operators set them per plan with PLAN_LIMITS_FILE):",
        "`stream_bytes` and `kv_bytes` (bytes kept: message payloads; KV keys and values), `stream_messages` (messages one stream keeps; `used` and `of` are the fullest stream), `runs_per_minute` (runs started, however they start, schedule ticks included) and `webhook_deliveries_per_second` (per webhook; `used` and `of` are the busiest flow).",
        "`schedules` (flows with an active schedule trigger) and `schedule_interval_seconds` (the shortest time a schedule's ticks may be apart: a floor, not a ceiling; `used` and `of` are the active schedule whose ticks come closest, 0 with none).",
        "`event_bytes` (events kept: `POST /events` and `event.send`, each for 31 days; keys and data as JSON), `flow_revision_bytes` (flow revisions kept: one per save, for good, deleted flows' too; trigger, steps and settings as JSON) and `run_record_bytes` (what one run may record in all: its steps' outputs as JSON and their error texts; `used` and `of` are the run of the latest 1,000 that recorded the most).",
        "A run whose next output would pass `run_record_bytes` fails at that step, naming the limit, and keeps what it recorded; an `event.send` step past `event_bytes` fails.",
        "`outbound_requests_in_flight` (the account's `http.request` and `mcp.call` steps in flight at once in one worker process: `used` is the count in the process that answers, 0 in an API process that runs no worker) and `run_outbound_requests_in_flight` (one run's at once; `used` and `of` are the busiest run in that process); a request past either waits for a slot within its step's timeout.",
        "Rates are sliding windows. Past a byte limit a write is 413, past `stream_messages` a publish is 409 (both with the limit in `limit`), past a rate 429 with Retry-After.",
        "Saving a flow active with a schedule is 409 past `schedules` and 400 (naming `trigger.cron`) past `schedule_interval_seconds`; a schedule tick past `runs_per_minute` starts no run and is counted in the `schedules.refused` metric.",
      ].join(" "),
      errorResponses: withCredential,
    })
    .input(z.void())
    .output(z.object({ data: z.object({ plan: z.string(), limits: z.array(limitUsage) }) }))
    .query(async ({ ctx }) => ({ data: await accountUsage(ctx.services, ctx.principal.accountId) })),
});
