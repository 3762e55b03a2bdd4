/**
 * What the jsonb columns hold, typed once for every layer. The `Database` type (schema.ts)
 * declares each column with `JSONColumnType<Shape>`: a select returns the parsed value (the
 * pg driver and PGlite both parse jsonb), an insert or update passes JSON text, as the code
 * writes it (`JSON.stringify`).
 *
 * packages/core builds what it writes from these types (its zod schemas' transforms return
 * them, and its API output schemas accept them), so tsc checks the shapes where they are
 * written and where they are read. Nothing here imports application code.
 */

// Flow steps: `flows.steps`/`on_failure` (as saved), `flow_revisions.steps`/`on_failure` (as run).

/** The functions the flow engine runs: the only values a task's `subject` takes. */
export type BuiltInSubject =
  | "http.request"
  | "kv.get"
  | "kv.put"
  | "stream.publish"
  | "transform"
  | "respond"
  | "delay"
  | "js"
  | "wait.event"
  | "event.send"
  | "flow.call"
  | "mcp.call";

/** A task's retry options; a stored revision holds all three. */
export type StepOptions = {
  /** Milliseconds one attempt may take. */
  timeout: number;
  /** Attempts in all, the first included. */
  attempts: number;
  /** Milliseconds before the first retry; later retries back off exponentially from it. */
  backoff_ms: number;
};

/**
 * The shape of a flow's steps: a list whose steps are tasks (a function with a payload) or
 * control steps holding lists of their own (`switch`, `for_each`, `parallel`), any of them
 * guarded by `if` and handled by `catch`, and `stop`. One definition serves the steps as
 * saved (tasks may be node references) and as a revision stores them (tasks resolved).
 */

/** What any step but `stop` may carry. */
export type StepGuards<Task> = {
  /** A template: a false value (false, null, missing, 0, "" or []) skips the step. */
  if?: string;
  /** Run when the step fails after its retries; their last output becomes the step's. */
  catch?: FlowStep<Task>[];
};

export type SwitchCase<Task> = {
  when: string;
  steps: FlowStep<Task>[];
};

export type SwitchStep<Task> = StepGuards<Task> & {
  name: string;
  switch: SwitchCase<Task>[];
  default?: FlowStep<Task>[];
};

export type ForEachStep<Task> = StepGuards<Task> & {
  name: string;
  /** A template whose value is the array to iterate. */
  for_each: string;
  steps: FlowStep<Task>[];
  /** Items run at once, 1-50. */
  concurrency: number;
};

export type ParallelStep<Task> = StepGuards<Task> & {
  name: string;
  parallel: Record<string, FlowStep<Task>[]>;
};

export type StopStep = {
  name: string;
  if?: string;
  stop: { output?: unknown; response?: { status: number; headers: Record<string, string>; body?: unknown } };
};

export type ControlStep<Task> = SwitchStep<Task> | ForEachStep<Task> | ParallelStep<Task> | StopStep;

export type FlowStep<Task> = (Task & StepGuards<Task>) | ControlStep<Task>;

/** A node template reference as saved (`nodes.<id>`, lower case): resolved into a task when the flow is saved. */
export type NodeStepInput = {
  name: string;
  node: string;
};

/** An inline task as saved, its options filled in. */
export type InlineStepInput = {
  name: string;
  node_type: "function";
  subject: BuiltInSubject;
  payload: Record<string, unknown>;
  options: StepOptions;
};

/** A step as saved (`flows.steps`, `flows.on_failure`). */
export type StepInput = FlowStep<NodeStepInput | InlineStepInput>;

/** A task as a revision runs it: node references already resolved, options complete. */
export type TaskStep = {
  name: string;
  subject: BuiltInSubject;
  /** JSON whose strings may hold templates. */
  payload: Record<string, unknown>;
  options: StepOptions;
};

/** A step as a revision stores it (`flow_revisions.steps`, `flow_revisions.on_failure`). */
export type StoredStep = FlowStep<TaskStep>;

// Triggers: `flows.trigger`, `flow_revisions.trigger`, as saved and returned (never a signing secret).

export type WebhookAccess = "public" | "api_key" | "signature";

export type WebhookService = "stripe" | "github" | "slack" | "shopify" | "twilio" | "standard" | "custom";

/** How a `custom` sender signs: HMAC of the raw body. */
export type HmacConfig = {
  header: string;
  algorithm: "sha1" | "sha256" | "sha512";
  encoding: "hex" | "base64";
  prefix?: string;
  timestamp_header?: string;
  tolerance_s?: number;
};

export type WebhookTriggerSettings = {
  type: "webhook";
  events: string[];
  response_mode: "acknowledge" | "wait";
  access: WebhookAccess;
  service: WebhookService | null;
  hmac: HmacConfig | null;
  delivery_id_field: string | null;
  /** Seconds a delivery id is remembered: a repeat within them starts no second run. */
  dedup_window_s: number;
};

export type ScheduleSettings = {
  type: "schedule";
  cron: string;
  /** IANA zone; UTC when the flow names none. */
  timezone: string;
  /** A tick no worker was up for: `skip` starts nothing for it, `latest` one run for the latest missed. */
  catch_up: "skip" | "latest";
};

/** A flow started only by `POST /flows/{id}/runs` (which every flow keeps). */
export type ManualTriggerSettings = {
  type: "manual";
};

export type TriggerSettings = WebhookTriggerSettings | ScheduleSettings | ManualTriggerSettings;

// Flow settings of `flows` and `flow_revisions`, the flow controls (null: none).

export type ConcurrencyLimit = {
  limit: number;
  /** A template of the trigger data; absent, all the flow's runs share the limit. */
  key?: string;
};

/** `priority` of `flows` and `flow_revisions`: a template of the trigger data giving a run's priority, in seconds. */
export type PriorityRule = {
  run: string;
};

export type ThrottleLimit = {
  limit: number;
  period_s: number;
  /** A template of the trigger data; absent, all the flow's runs share the throttle. */
  key?: string;
};

/** `debounce` of `flows` and `flow_revisions`: a start waits `period_s` of quiet (at most `timeout_s`) per key. */
export type DebounceSettings = {
  period_s: number;
  timeout_s?: number;
  /** A template of the trigger data; absent, all the flow's runs share the debounce. */
  key?: string;
};

/** `batch` of `flows` and `flow_revisions`: starts gathered into one run per key, `max_items` or `timeout_s` at most. */
export type BatchSettings = {
  max_items: number;
  timeout_s: number;
  /** A template of the trigger data; absent, all the flow's runs share the batch. */
  key?: string;
};

export type RateLimit = {
  limit: number;
  period_s: number;
  /** A template of the trigger data; absent, all the flow's runs share the rate limit. */
  key?: string;
};

export type Singleton = {
  /** A template of the trigger data; absent, one run of the whole flow at a time. */
  key?: string;
  /** What a start finds when a run of its key is queued or running: it is skipped, or it cancels that run. */
  mode: "skip" | "cancel";
};

/**
 * `mcp` of `flows` and `flow_revisions`: the flow as a tool of the account's MCP endpoint. The
 * schemas are JSON Schema objects, checked when the flow is saved.
 */
export type McpTool = {
  /** Unique among the account's live flows. */
  tool: string;
  description: string;
  input_schema: Record<string, unknown>;
  /** null: the tool declares no output schema. */
  output_schema: Record<string, unknown> | null;
};

// Run step records: `run_steps.record` (the output is kept apart, in `run_steps.output`).

/** One try of a step. */
export type AttemptRecord = {
  /** ISO times. `finished_at` is absent while the attempt runs. */
  started_at: string;
  finished_at?: string;
  /** Why it failed; absent when it succeeded. */
  error?: string;
  /** What a `js` step wrote with `console` (redacted, bounded; the last line says what was dropped). */
  logs?: StepLogLine[];
  /** The call an `http.request` attempt made. */
  http?: HttpCallRecord;
};

/** One `console` line of a `js` step: its method, its text, when (ISO). */
export type StepLogLine = { level: "log" | "info" | "warn" | "error" | "debug"; message: string; at: string };

/** An `http.request` attempt's call: the URL (redacted) asked, the final answer's status (null: none came), sizes in bytes. */
export type HttpCallRecord = {
  method: string;
  url: string;
  status: number | null;
  duration_ms: number;
  request_bytes: number;
  /** The answer's body as read (null: none was read). */
  response_bytes: number | null;
};

/**
 * `running`: an attempt (or, for a control step, its steps) is under way; `waiting`: a
 * `delay` step waits until `until`; `retrying`: a failed attempt waits for its backoff until
 * `until`; `skipped`: its `if` was false.
 */
export type StepStatus = "running" | "waiting" | "retrying" | "succeeded" | "failed" | "skipped";

/**
 * What the run keeps of one step (the checkpoint), under its key: the step's name, and
 * inside a for-each the item's index after it (`fetch[3]`, nested `fetch[3][0]`).
 */
export type StepRecord = {
  status: StepStatus;
  attempts: AttemptRecord[];
  output?: unknown;
  error?: string;
  started_at: string;
  finished_at?: string;
  /** When a waiting or retrying step may go on (ISO). */
  until?: string;
  /** A switch: the case that ran (its index), `"default"`, or null when none did. */
  case?: number | "default" | null;
  /** A for-each: how many items it iterates. */
  items?: number;
  /** The task whose failure this step ended with or handled (for a control step, one of its steps). */
  failed_step?: string;
  /** Its `catch` handler ran after `error`; the output is the handler's. */
  handled?: boolean;
  /** A `wait.event` or `flow.call` waiting: the event key, since when (ISO), and what a timeout does. */
  wait?: { key: string; since: string; on_timeout: "fail" | "continue" };
  /** A `flow.call`: the run it started. */
  child_run_id?: string;
  /** A `stop` ended the run here; `response` is its wait-mode answer, if it gave one. */
  stopped?: boolean;
  response?: unknown;
};

// Runs: `runs.status` (a text column; bulk replays' filters name it too).

export type RunStatus =
  | "queued"
  | "running"
  | "succeeded"
  | "failed"
  | "cancelled"
  | "filtered"
  | "duplicate"
  | "rejected"
  | "skipped"
  | "batched";

// Bulk replays: `replay_jobs.filter`.

/** The runs a bulk replay takes, as asked: times are ISO. */
export type ReplayJobFilter = { status?: RunStatus; from?: string; to?: string };

// The MCP registry's mirror: `mcp_registry_servers.entry`.

/** An entry as answered: server.json fields plus `_meta` (by namespace: the official one holds `isLatest`). */
export type RegistryEntry = Record<string, unknown> & { _meta?: Record<string, Record<string, unknown>> };
