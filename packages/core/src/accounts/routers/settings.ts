import { z } from "zod";
import { withCredential } from "../../schemas.ts";
import { router } from "../../trpc.ts";
import { readSettings, updateSettings } from "../settings.ts";
import { op } from "./shared.ts";

const settings = z
  .object({
    run_retention_days: z.number().int().meta({ description: "Days the account's runs are kept after acceptance." }),
    run_retention_days_max: z
      .number()
      .int()
      .meta({ description: "The longest the deployment keeps runs (RUN_RETENTION_DAYS): the most it may be set to." }),
  })
  .meta({ id: "AccountSettings" });

const settingsOutput = z.object({ data: settings });

/** `accounts.settings`: what an account decides for itself within the deployment's settings. */
export const settingsRouter = router({
  get: op
    .authed({
      method: "GET",
      path: "/accounts/settings",
      summary: "The account's settings",
      description: "How long the account's runs are kept (its own choice, else the deployment's RUN_RETENTION_DAYS).",
      errorResponses: withCredential,
    })
    .input(z.void())
    .output(settingsOutput)
    .query(async ({ ctx }) => ({ data: await readSettings(ctx.services, ctx.principal.accountId) })),
  update: op
    .authed({
      method: "PUT",
      path: "/accounts/settings",
      summary: "Change the account's settings",
      description:
        "Owners and admins only. `run_retention_days` shortens how long the account's runs are kept (1 up to RUN_RETENTION_DAYS; more is 400); null gives back the deployment's. Runs that ended and are older are deleted by the worker within a minute, in batches; runs still queued, running or waiting stay.",
      errorResponses: { ...withCredential, 403: "Not an owner or admin" },
    })
    .input(
      z.object({
        run_retention_days: z
          .number({ error: "must be a whole number of days, or null" })
          .int({ error: "must be a whole number of days, or null" })
          .min(1, { error: "must be at least 1" })
          .nullable(),
      }),
    )
    .output(settingsOutput)
    .mutation(async ({ ctx, input }) => ({ data: await updateSettings(ctx.services, ctx.principal, input) })),
});
