import { z } from "zod";
import { withCredential } from "../../schemas.ts";
import { TRACE_DATA_MAX_CHARS } from "../../tracing/run-data.ts";
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
    trace_run_data: z.boolean().meta({
      description: `Whether the account's runs show their data in their traces (when the deployment traces): the trigger data on each \`run\` span (\`platform.run.trigger\`) and each succeeded step's output on its \`step\` span (\`platform.step.output\`), as JSON cut to ${TRACE_DATA_MAX_CHARS.toLocaleString("en")} characters, redacted of the secrets the run read. False unless the account turns it on.`,
    }),
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
      description:
        "How long the account's runs are kept (its own choice, else the deployment's RUN_RETENTION_DAYS), and whether their traces show their data.",
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
        "Signed-in owners and admins only: no API key changes them, unrestricted or naming the operation (403). Each field is optional: a setting left out stays as it is. `run_retention_days` shortens how long the account's runs are kept (1 up to RUN_RETENTION_DAYS; more is 400); null gives back the deployment's. Runs that ended and are older are deleted by the worker within a minute, in batches; runs still queued, running or waiting stay. `trace_run_data` true makes the spans of the account's runs carry their trigger data and step outputs (see AccountSettings), false (the default) keeps them out; every worker follows a change within seconds, from the next delivery of a run. Another JSON type (`\"7\"`, `true`, `[7]`) or another field is 400 naming it.",
      errorResponses: { ...withCredential, 403: "Not a signed-in owner or admin (an API key never is)" },
    })
    .input(
      // Strict, and the number piped: the REST adapter coerces a body's numbers (`true` would
      // be 1 day, `"7"` 7 days) but does not reach into a pipe (as `bodyInteger`).
      z.strictObject({
        run_retention_days: z
          .number({ error: "must be a whole number of days, or null" })
          .int({ error: "must be a whole number of days, or null" })
          .min(1, { error: "must be at least 1" })
          .pipe(z.number())
          .nullable()
          .optional(),
        trace_run_data: z.boolean({ error: "must be true or false" }).pipe(z.boolean()).optional(),
      }),
    )
    .output(settingsOutput)
    .mutation(async ({ ctx, input }) => ({ data: await updateSettings(ctx.services, ctx.principal, input) })),
});
