import { z } from "zod";
import { eventKey } from "../engine/event-keys.ts";
import { RUN_STATUSES } from "../enums.ts";
import { uuidParam } from "../schemas.ts";
import { timeInput } from "../time.ts";

export { RUN_STATUSES } from "../enums.ts";

const isoTime = z.string().meta({ description: "ISO 8601 time, UTC, with milliseconds." });
const nullableTime = isoTime.nullable();

export const attempt = z
  .object({
    started_at: isoTime,
    finished_at: isoTime.optional().meta({ description: "Absent while the attempt runs." }),
    error: z.string().optional().meta({ description: "Why it failed; absent when it succeeded." }),
    logs: z
      .array(
        z.object({
          level: z.enum(["log", "info", "warn", "error", "debug"]).meta({ description: "The console method." }),
          message: z.string().meta({
            description:
              "The values written, as console shows them (strings as they are, others as JSON), with the run's secret values redacted (`[secret:<key>]`). A line cut at a bound ends with `… [truncated]`.",
          }),
          at: isoTime,
        }),
      )
      .optional()
      .meta({
        description:
          "A `js` step's attempt: what its code wrote with `console.log`, `info`, `warn`, `error` and `debug`, in order. At most `STEP_LOG_MAX_LINES` lines (100) and `STEP_LOG_MAX_BYTES` (16 KiB) per attempt, `RUN_LOG_MAX_BYTES` (64 KiB) per run, within what the run may record (`run_record_bytes`); when lines were dropped the last one says how many. Absent when it wrote nothing.",
      }),
    http: z
      .object({
        method: z.string(),
        url: z.string().meta({ description: "The URL asked, secret values redacted." }),
        status: z
          .number()
          .int()
          .nullable()
          .meta({ description: "The status of the answer (the last, after redirects); null when none came." }),
        duration_ms: z.number().int().meta({ description: "From the start of the request to the end of its answer." }),
        request_bytes: z.number().int().meta({ description: "The body sent, in bytes." }),
        response_bytes: z
          .number()
          .int()
          .nullable()
          .meta({ description: "The answer's body as read, in bytes; null when none was read." }),
      })
      .optional()
      .meta({ description: "An `http.request` step's attempt: the call it made." }),
  })
  .meta({ id: "RunStepAttempt" });

export const runStep = z
  .object({
    name: z.string(),
    parent: z.string().optional().meta({
      description:
        "The control step whose list holds this step (a switch case, a for-each, a parallel branch, a `catch`).",
    }),
    item: z.array(z.number().int()).optional().meta({
      description: "Inside a for-each: the item's index, one per enclosing for-each, outermost first.",
    }),
    status: z.enum(["running", "waiting", "retrying", "succeeded", "failed", "skipped"]).meta({
      description:
        "`waiting`: a `delay` step until `until`; `retrying`: a failed attempt waits for its backoff until `until`; `skipped`: its `if` was false (output null). A control step is `running` while its steps run.",
    }),
    attempts: z.array(attempt),
    output: z.unknown().optional(),
    error: z.string().optional(),
    started_at: isoTime,
    finished_at: isoTime.optional(),
    until: isoTime.optional(),
    case: z
      .union([z.number().int(), z.literal("default"), z.null()])
      .optional()
      .meta({
        description: "A switch: the index of the case that ran, `default`, or null when none did.",
      }),
    items: z.number().int().optional().meta({ description: "A for-each: how many items it iterates." }),
    failed_step: z.string().optional().meta({
      description: "The task whose failure this step ended with, or (with `handled`) its handler handled.",
    }),
    handled: z.boolean().optional().meta({
      description: "Its `catch` handler ran after `error`; `output` is the handler's.",
    }),
    stopped: z.boolean().optional().meta({ description: "A `stop` ended the run here." }),
    wait: z
      .object({ key: z.string(), since: isoTime, on_timeout: z.enum(["fail", "continue"]) })
      .optional()
      .meta({ description: "A `wait.event` waiting: the event key, since when, and what its timeout (`until`) does." }),
    child_run_id: z.string().optional().meta({ description: "A `flow.call`: the run it started." }),
    response: z.unknown().optional().meta({ description: "A `stop`: the wait-mode answer it gave." }),
  })
  .meta({ id: "RunStep" });

const runFields = {
  id: z.string(),
  flow_id: z.string(),
  revision: z.number().int().meta({ description: "The flow revision the run was accepted under, and runs." }),
  status: z.enum(RUN_STATUSES),
  error: z.string().nullable().meta({ description: "Why the run failed: the failed step and its last error." }),
  replay_of: z.string().nullable().meta({ description: "The run this one replays." }),
  parent_run_id: z.string().nullable().meta({
    description: "The run whose `flow.call` step started this one (its step names this run: `child_run_id`).",
  }),
  queue_reason: z.string().nullable().meta({
    description:
      "Why a queued run waits: `waiting for concurrency slot` (the flow's `concurrency`), `waiting for throttle window` (its `throttle`); null otherwise.",
  }),
  end_reason: z.string().nullable().meta({
    description:
      "Why a flow control ended the run without running it: a `skipped` run (its rate limit spent, a singleton's run of its key under way, replaced by a later start under its debounce), a `batched` one (its trigger joined the batch run `taken_by`), a `cancelled` one that waited longer than its `start_timeout_s`, or one a singleton's `cancel` mode stopped; null otherwise.",
  }),
  taken_by: z.string().nullable().meta({
    description:
      "The run that runs in this one's place: the later start that replaced it under a debounce, or the batch run its trigger joined; null otherwise.",
  }),
  created_at: isoTime.meta({ description: "When the run was accepted." }),
  started_at: nullableTime.meta({ description: "When a worker first took it." }),
  finished_at: nullableTime,
  duration_ms: z.number().int().nullable().meta({ description: "From acceptance to the end; null until it ends." }),
};

export const runSummary = z.object(runFields).meta({ id: "RunSummary" });

export const run = z
  .object({
    ...runFields,
    trigger: z.unknown().meta({ description: "The trigger data." }),
    steps: z.array(runStep).meta({
      description:
        "The steps that started or were skipped, in the flow's order; inside a for-each, item by item (100 items at a time: `items_from`).",
    }),
    output: z.unknown().meta({ description: "The last step's output, once the run succeeded." }),
    response: z.unknown().meta({ description: "The `respond` step's status, headers and body, if it ran." }),
    trace_id: z.string().nullable().meta({
      description:
        "The OpenTelemetry trace of the run (32 hex digits), from its acceptance through every step: look it up in the tracing backend the deployment exports to (docs/guide/observability.md). Null when the process that accepted it did not trace.",
    }),
  })
  .meta({ id: "Run" });

export const runIdInput = z.object({ id: uuidParam("Id of the run (a UUID).") });

export const runViewInput = runIdInput.extend({
  items_from: z.coerce
    .number()
    .int({ error: "must be a whole number" })
    .min(0, { error: "must be at least 0" })
    .default(0)
    .meta({
      description:
        "Which for-each items to show the steps of: 100 from this index (default 0). A for-each's own step says how many `items` it has.",
    }),
});

/** A dotted path of trigger data: 1 to 16 keys of 1 to 200 characters without a dot. */
const TRIGGER_PATH = /^[^.]{1,200}(\.[^.]{1,200}){0,15}$/;

/** A time bound of a run listing: ISO 8601 (`2026-11-26T07:00:00Z`), in the years 0001 to 9999. */
const acceptedAt = (description: string) =>
  timeInput.optional().meta({
    description: `${description} (ISO 8601, years 0001 to 9999), by \`created_at\`. Answered from an index: run ids are UUIDv7, which begin with the time they were made, so the range is first an id range.`,
  });

/** What pages a run list: a status, a time range, a cursor and a page size. */
const runPageFields = {
  status: z.enum(RUN_STATUSES).optional().meta({ description: "Only runs with this status." }),
  cursor: z
    .uuid({ error: "must be a next_cursor of a previous page" })
    .optional()
    .meta({ description: "`next_cursor` of the previous page." }),
  limit: z.coerce
    .number()
    .int({ error: "must be a whole number" })
    .min(1, { error: "must be 1-100" })
    .max(100, { error: "must be 1-100" })
    .default(50)
    .meta({ description: "Page size, 1-100 (default 50)." }),
  from: acceptedAt("Only runs accepted at or after this time"),
  to: acceptedAt("Only runs accepted before this time"),
};

/** `GET /runs`: every run of the account. */
export const listAccountRunsInput = z.object(runPageFields);

export const listRunsInput = z
  .object({
    id: uuidParam("Id of the flow (a UUID)."),
    ...runPageFields,
    where: z
      .string()
      .regex(TRIGGER_PATH, { error: "must be a dotted path of the trigger data, such as body.data.object.customer" })
      .optional()
      .meta({
        description:
          "With `equals`: only runs whose trigger data holds `equals` at this dotted path (`body.data.object.customer`). Each part names an object key (arrays are not searched into). Answered from a GIN index of the trigger data (`jsonb_path_ops`), never a scan of the flow's runs.",
      }),
    equals: z.string().max(1000, { error: "must be at most 1000 characters" }).optional().meta({
      description:
        "The value at `where`: a string equal to it, or, when it reads as one, the number, `true`, `false` or `null` it spells.",
    }),
  })
  .superRefine((query, ctx) => {
    // One without the other would be silently ignored, or match nothing: name the missing one.
    if (query.where !== undefined && query.equals === undefined) {
      ctx.addIssue({ code: "custom", path: ["equals"], message: "must be given with `where`" });
    }
    if (query.equals !== undefined && query.where === undefined) {
      ctx.addIssue({ code: "custom", path: ["where"], message: "must be given with `equals`" });
    }
  });

export const listRunsOutput = z.object({
  data: z.array(runSummary),
  next_cursor: z
    .string()
    .nullable()
    .meta({ description: "Pass as `cursor` for the next (older) page; null on the last." }),
});

export const accepted = z.object({
  message: z.literal("accepted"),
  run_id: z.string(),
});

/** tRPC `runs.start`: the trigger data beside the flow id (REST clients send it as the body). */
export const startRunInput = z.object({
  flow_id: z.uuid({ error: "must be a UUID" }),
  trigger: z.record(z.string(), z.unknown()).default({}),
  wait: z.boolean().default(false),
});

export const startRunOutput = z.union([
  accepted,
  z.object({
    status: z.enum(["succeeded", "failed", "timeout", "duplicate"]),
    run_id: z.string(),
    response: z
      .object({ status: z.number().int(), headers: z.record(z.string(), z.string()), body: z.unknown() })
      .optional(),
    error: z.string().optional(),
  }),
]);

export const replayRunsInput = z.object({
  id: uuidParam("Id of the flow (a UUID)."),
  status: z
    .enum(RUN_STATUSES)
    .optional()
    .meta({ description: "Only runs with this status (`failed` after an outage)." }),
  from: acceptedAt("Only runs accepted at or after this time"),
  to: acceptedAt("Only runs accepted before this time"),
});

export const replayIdInput = z.object({ id: uuidParam("Id of the replay job (a UUID).") });

export const replayJob = z
  .object({
    id: z.string(),
    flow_id: z.string(),
    status: z.enum(["running", "done", "cancelled"]).meta({
      description:
        "`running` until every matched run was replayed and every replay ended (`done`), or it was stopped (`cancelled`).",
    }),
    filter: z.object({ status: z.string().nullable(), from: nullableTime, to: nullableTime }),
    matched: z.number().int().meta({ description: "Runs that matched the filter when the job was made." }),
    started: z.number().int().meta({ description: "Replays started so far." }),
    done: z.number().int().meta({ description: "Replays that have ended (succeeded, failed or cancelled)." }),
    created_at: isoTime,
    finished_at: nullableTime,
  })
  .meta({ id: "ReplayJob" });

export const replayJobOutput = z.object({ data: replayJob });

/** Strict: a misspelt field (`dta`) would send an event with no data and answer 200. */
export const sendEventInput = z.strictObject({
  key: eventKey,
  data: z.unknown().default(null).meta({ description: "Any JSON: the output of the steps that waited for it." }),
});

export const sendEventOutput = z.object({
  data: z.object({
    resumed: z.number().int().meta({ description: "How many waiting runs the event woke." }),
  }),
});
