import { z } from "zod";
import { accountUsage } from "../../limits/usage.ts";
import { withCredential } from "../../schemas.ts";
import { router } from "../../trpc.ts";
import { op } from "./shared.ts";

const limitUsage = z
  .object({
    name: z.enum(["stream_bytes", "kv_bytes", "stream_messages", "runs_per_minute", "webhook_deliveries_per_second"]),
    limit: z.number().int(),
    used: z.number().int(),
    unit: z.enum(["bytes", "messages", "runs", "deliveries"]),
    per: z.enum(["account", "stream", "flow"]),
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
      description:
        "Limits come from the account's plan (`subscription_status`; operators set them per plan with PLAN_LIMITS_FILE): `stream_bytes` and `kv_bytes` (bytes kept: message payloads; KV keys and values), `stream_messages` (messages one stream keeps; `used` and `of` are the fullest stream), `runs_per_minute` (runs started, however they start) and `webhook_deliveries_per_second` (per webhook; `used` and `of` are the busiest flow). Rates are sliding windows. Past a byte limit a write is 413, past `stream_messages` a publish is 409 (both with the limit in `limit`), past a rate 429 with Retry-After.",
      errorResponses: withCredential,
    })
    .input(z.void())
    .output(z.object({ data: z.object({ plan: z.string(), limits: z.array(limitUsage) }) }))
    .query(async ({ ctx }) => ({ data: await accountUsage(ctx.services, ctx.principal.accountId) })),
});
