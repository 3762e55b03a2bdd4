import { z } from "zod";
import { withCredential } from "../schemas.ts";
import { authedProcedure, operations, router } from "../trpc.ts";
import { ACTIVITY_WINDOWS, type ActivityWindow, runActivity } from "./activity.ts";
import { cancelReplayJob, createReplayJob, getReplayJob, REPLAY_WINDOW } from "./replays.ts";
import {
  accepted,
  listAccountRunsInput,
  listRunsInput,
  listRunsOutput,
  replayIdInput,
  replayJobOutput,
  replayRunsInput,
  run,
  runIdInput,
  runViewInput,
  sendEventInput,
  sendEventOutput,
  startRunInput,
  startRunOutput,
} from "./schemas.ts";

const op = operations(["runs"]);
const runIdRule =
  "An id that is not a UUID is 400 `invalid input: id: must be a UUID`; a run the account does not have is 404 `run not found`.";

/**
 * Runs of flows. `POST /flows/{id}/runs` is a plain route of the API (its body is the trigger
 * data and wait mode answers with the `respond` step's status and headers), described in
 * the OpenAPI document by hand; tRPC clients start runs with `runs.start`.
 */
export const runsRouter = router({
  start: authedProcedure
    .input(startRunInput)
    .output(startRunOutput)
    .mutation(async ({ ctx, input }) => {
      const { runs, config } = ctx.services;
      const start = { accountId: ctx.principal.accountId, flowId: input.flow_id, trigger: input.trigger };
      if (!input.wait) {
        const { runId } = await runs.start(start);
        return { message: "accepted" as const, run_id: runId };
      }
      ctx.request.holdOpen(config.runs.waitTimeoutMs);
      const outcome = await runs.startAndWait(start, config.runs.waitTimeoutMs);
      return {
        status: outcome.status,
        run_id: outcome.runId,
        ...(outcome.status === "succeeded" ? { response: outcome.response } : {}),
        ...(outcome.status === "failed" ? { error: outcome.error } : {}),
      };
    }),

  list: op
    .authed({
      method: "GET",
      path: "/flows/{id}/runs",
      summary: "List a flow's runs, newest first",
      description:
        "Each run without its trigger data and steps (read one with `GET /runs/{id}`). `status` keeps one status; pages follow `next_cursor`. A flow the account does not have (or deleted) is 404 `flow not found`.",
      errorResponses: { ...withCredential, 404: "No such flow" },
    })
    .input(listRunsInput)
    .output(listRunsOutput)
    .query(({ ctx, input }) => ctx.services.runs.list(ctx.principal.accountId, input.id, input)),

  listAll: op
    .authed({
      method: "GET",
      path: "/runs",
      summary: "List the account's runs, newest first",
      description:
        "Every run of every flow of the account (deleted flows' runs included until retention removes them), each without its trigger data and steps; `flow_id` says whose. `status`, `from` and `to` filter, pages follow `next_cursor`, as `GET /flows/{id}/runs`. Read along an index of the account's runs by id: a rare `status` over many runs reads past the others.",
      errorResponses: withCredential,
    })
    .input(listAccountRunsInput)
    .output(listRunsOutput)
    .query(({ ctx, input }) => ctx.services.runs.list(ctx.principal.accountId, null, input)),

  activity: op
    .authed({
      method: "GET",
      path: "/runs/activity",
      summary: "Count the account's runs over the last hour or day, for charts",
      description:
        "`window` `hour` (60 one-minute buckets, the default) or `day` (96 of 15 minutes), aligned to their width; `flow_id` keeps one flow's runs. Each bucket counts the runs accepted in it: `accepted`, those that have `succeeded` or `failed` by now, and `deliveries` (runs of flows a webhook starts, and deliveries that started none: filtered, duplicate, rejected). Every bucket is answered, empty ones as zeros, oldest first.",
      errorResponses: { ...withCredential, 404: "No such flow" },
    })
    .input(
      z.object({
        window: z
          .enum(Object.keys(ACTIVITY_WINDOWS) as [ActivityWindow, ...ActivityWindow[]], {
            error: 'must be "hour" or "day"',
          })
          .default("hour"),
        flow_id: z.uuid({ error: "must be a UUID" }).optional(),
      }),
    )
    .output(
      z.object({
        data: z.object({
          bucket_s: z.number().int(),
          buckets: z.array(
            z.object({
              at: z.string(),
              accepted: z.number().int(),
              succeeded: z.number().int(),
              failed: z.number().int(),
              deliveries: z.number().int(),
            }),
          ),
        }),
      }),
    )
    .query(async ({ ctx, input }) => ({
      data: await runActivity(ctx.services.db, ctx.principal.accountId, input.window, input.flow_id ?? null),
    })),

  get: op
    .authed({
      method: "GET",
      path: "/runs/{id}",
      summary: "Read a run",
      description: `Status (\`queued\`, \`running\`, \`succeeded\`, \`failed\`; \`filtered\`, \`duplicate\` and \`rejected\` for webhook deliveries that started nothing), the trigger data, each step's attempts (start, end, error), output, error and timings (the path taken: skipped steps, the case a switch took, each for-each item's steps, parallel branches, handlers that ran), the output and the \`respond\` step's response. Times are ISO 8601 in UTC. ${runIdRule}`,
      errorResponses: { ...withCredential, 404: "No such run" },
    })
    .input(runViewInput)
    .output(run)
    .query(({ ctx, input }) => ctx.services.runs.get(ctx.principal.accountId, input.id, input.items_from)),

  replay: op
    .authed({
      method: "POST",
      path: "/runs/{id}/replay",
      summary: "Run a run's trigger data again",
      description: `Starts a new run of the same flow, under the revision the original ran (not the flow's current one: a replay repeats what happened), with the same trigger data; the new run's \`replay_of\` names the original. Answers like a run started by hand: \`{message: "accepted", run_id}\`. A run of a deleted flow is 404 \`flow not found\`. ${runIdRule}`,
      errorResponses: { ...withCredential, 404: "No such run, or its flow was deleted" },
    })
    .input(runIdInput)
    .output(accepted)
    .mutation(async ({ ctx, input }) => {
      const { runId } = await ctx.services.runs.replay(ctx.principal.accountId, input.id);
      return { message: "accepted" as const, run_id: runId };
    }),

  cancel: op
    .authed({
      method: "POST",
      path: "/runs/{id}/cancel",
      summary: "Cancel a run",
      description: `Ends a queued, waiting or running run \`cancelled\` and answers it as \`GET /runs/{id}\` does. A step under way is not interrupted mid-call, but its result is discarded and no further step starts; a \`delay\`, \`wait.event\` or \`flow.call\` waiting ends at once (a flow.call's caller sees its call fail: \`cancelled\`). A wait-mode request waiting for the run answers 500 \`cancelled\`. Idempotent: a run that has ended already is answered as it is. ${runIdRule}`,
      errorResponses: { ...withCredential, 404: "No such run" },
    })
    .input(runIdInput)
    .output(run)
    .mutation(({ ctx, input }) => ctx.services.runs.cancel(ctx.principal.accountId, input.id)),

  replayMany: op
    .authed({
      method: "POST",
      path: "/flows/{id}/runs/replay",
      summary: "Replay a flow's runs in bulk",
      description: `Starts a background job that replays, oldest first, every run of the flow accepted before now that matches the filter (\`status\`, \`from\`, \`to\`; none: every run), each as \`POST /runs/{id}/replay\` would (the original's revision and trigger data; \`replay_of\` names it). It keeps at most twice the flow's concurrency limit (else ${REPLAY_WINDOW}) of its replays queued or running at once (the limit itself holds as always), within the plan's runs per minute, so live runs are not starved; follow it with \`GET /replays/{id}\`. A flow the account does not have (or deleted) is 404 \`flow not found\`.`,
      errorResponses: { ...withCredential, 404: "No such flow" },
    })
    .input(replayRunsInput)
    .output(replayJobOutput)
    .mutation(async ({ ctx, input }) => {
      const { id, ...filter } = input;
      return { data: await createReplayJob(ctx.services, ctx.principal.accountId, id, filter) };
    }),

  replayJob: op
    .authed({
      method: "GET",
      path: "/replays/{id}",
      summary: "Read a bulk replay's progress",
      description:
        "How many runs matched, how many replays started and how many ended. A job the account does not have is 404 `replay not found`.",
      errorResponses: { ...withCredential, 404: "No such replay job" },
    })
    .input(replayIdInput)
    .output(replayJobOutput)
    .query(async ({ ctx, input }) => ({
      data: await getReplayJob(ctx.services, ctx.principal.accountId, input.id),
    })),

  stopReplay: op
    .authed({
      method: "DELETE",
      path: "/replays/{id}",
      summary: "Stop a bulk replay",
      description:
        "The job starts no more replays and is `cancelled`; replays already started go on (cancel one with `POST /runs/{id}/cancel`). Answers the job; idempotent, and a job that is done stays done. A job the account does not have is 404 `replay not found`.",
      errorResponses: { ...withCredential, 404: "No such replay job" },
    })
    .input(replayIdInput)
    .output(replayJobOutput)
    .mutation(async ({ ctx, input }) => ({
      data: await cancelReplayJob(ctx.services, ctx.principal.accountId, input.id),
    })),

  sendEvent: op
    .authed({
      method: "POST",
      path: "/events",
      summary: "Send an event to waiting runs",
      description:
        "Delivers an event to every run of the account whose `wait.event` step waits on `key` (the first event of its key sent after the step began waiting); that step's output is `data` and the run goes on, holding no worker meanwhile. Events are kept 31 days; one sent when nothing waits resumes nothing (`resumed: 0`). An approval step is built this way: a `wait.event` on `approval-{{run.id}}`, and the approver's click sends that key. A field other than `key` and `data` is 400 naming it (`invalid input: body: Unrecognized key: \"dta\"`). Events count against the plan's `event_bytes` (key and data as JSON) until they go: one past it is 413 naming the limit (`GET /accounts/usage`).",
      errorResponses: {
        ...withCredential,
        413: "The event would take the account past its plan's event_bytes (the limit is in `limit`)",
      },
    })
    .input(sendEventInput)
    .output(sendEventOutput)
    .mutation(async ({ ctx, input }) => ({
      data: { resumed: await ctx.services.events.send(ctx.principal.accountId, input.key, input.data) },
    })),
});
