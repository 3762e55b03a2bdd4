import type {
  ColumnType,
  Generated,
  GeneratedAlways,
  Insertable,
  JSONColumnType,
  Selectable,
  Updateable,
} from "kysely";
import type {
  BatchSettings,
  BuiltInSubject,
  ConcurrencyLimit,
  DebounceSettings,
  McpTool,
  PriorityRule,
  RateLimit,
  RegistryEntry,
  ReplayJobFilter,
  RunStatus,
  Singleton,
  StepInput,
  StepRecord,
  StoredStep,
  ThrottleLimit,
  TriggerSettings,
} from "./stored-shapes.ts";

/** A timestamp the database fills in: optional on insert, a Date when read. */
type CreatedAt = ColumnType<Date, Date | string | undefined, Date | string>;

export type Role = "owner" | "admin" | "member";

export interface AccountsTable {
  id: string;
  name: string;
  display_name: string;
  root_email: string;
  plan: ColumnType<string, string | undefined, string>;
  /** Days its runs are kept, when shorter than RUN_RETENTION_DAYS; null: that. */
  run_retention_days: ColumnType<number | null, number | null | undefined, number | null>;
  /** Whether its runs' spans carry their trigger data and step outputs (redacted, bounded). */
  trace_run_data: ColumnType<boolean, boolean | undefined, boolean>;
  created_at: CreatedAt;
}

export interface UsersTable {
  id: string;
  /** Always stored lower-cased; unique across the platform. */
  email: string;
  password_hash: string;
  display_name: string;
  created_at: CreatedAt;
}

export interface MembershipsTable {
  account_id: string;
  user_id: string;
  role: Role;
  created_at: CreatedAt;
}

/** A sign-in: one refresh-token family. Revoking it ends its access tokens too. */
export interface AuthSessionsTable {
  id: string;
  account_id: string;
  user_id: string;
  created_at: CreatedAt;
  revoked_at: Date | null;
  /** When the user last proved who they are in this session (sign-in, re-authentication). */
  authenticated_at: CreatedAt;
}

/** Refresh tokens, stored only as SHA-256 hashes; a rotated one is kept to recognise its reuse. */
export interface RefreshTokensTable {
  token_hash: string;
  session_id: string;
  account_id: string;
  user_id: string;
  expires_at: Date;
  rotated_at: Date | null;
  created_at: CreatedAt;
}

/** A password login waiting for its second factor; the MFA token is stored as a hash. */
export interface MfaChallengesTable {
  token_hash: string;
  account_id: string;
  user_id: string;
  webauthn_challenge: string | null;
  /** Set when the sign-in accepts this invitation once its second factor is given. */
  invitation_id: ColumnType<string | null, string | null | undefined, string | null>;
  expires_at: Date;
  created_at: CreatedAt;
}

export interface UserTotpTable {
  user_id: string;
  /** Base32. */
  secret: string;
  /** Null while the setup waits for its first code. */
  enabled_at: Date | null;
  /** The TOTP time step of the last accepted code; a code is accepted once. */
  last_used_step: number | null;
  created_at: CreatedAt;
}

export interface PasskeysTable {
  /** The WebAuthn credential id, base64url. */
  id: string;
  user_id: string;
  /** The COSE public key, base64url. */
  public_key: string;
  counter: ColumnType<number, number | undefined, number>;
  /** Written as a JSON string. */
  transports: JSONColumnType<string[]>;
  device_type: string;
  backed_up: boolean;
  created_at: CreatedAt;
  last_used_at: Date | null;
}

export interface PasskeyRegistrationsTable {
  user_id: string;
  challenge: string;
  expires_at: Date;
}

/** A pending invitation to join an account; `token_hash` is the SHA-256 of the token the invitee holds. */
export interface InvitationsTable {
  id: string;
  account_id: string;
  email: string;
  role: "admin" | "member";
  token_hash: string;
  invited_by: string | null;
  expires_at: Date;
  created_at: CreatedAt;
}

/** A password reset link not yet used; `token_hash` is the SHA-256 of the token in the link. */
export interface PasswordResetsTable {
  token_hash: string;
  user_id: string;
  expires_at: Date;
  created_at: CreatedAt;
}

export interface ApiKeysTable {
  id: string;
  account_id: string;
  created_by: string;
  name: string;
  /** The first characters of the key, shown in listings. */
  prefix: string;
  key_hash: string;
  /** Path patterns (`*` as suffix wildcard); null = unrestricted. Written as a JSON string. */
  allowed_paths: JSONColumnType<string[] | null, string | null, string | null>;
  created_at: CreatedAt;
}

/** A secret of an account; `value` is sealed (see packages/core/src/sealing.ts), never the plaintext. */
export interface SecretsTable {
  account_id: string;
  key: string;
  value: string;
  created_at: CreatedAt;
  updated_at: CreatedAt;
}

/** A node template; `payload` is JSON whose strings may hold `{{...}}` template references. */
export interface NodeTemplatesTable {
  /** A UUID. */
  id: string;
  account_id: string;
  collection: string;
  name: string;
  description: string;
  node_type: "function";
  /** The built-in function it runs. */
  subject: BuiltInSubject;
  /** Written as a JSON string. */
  payload: JSONColumnType<Record<string, unknown>>;
  timeout_ms: number;
  attempts: number;
  backoff_ms: number;
  created_at: CreatedAt;
  updated_at: CreatedAt;
}

/** A flow's controls and its MCP tool, kept on the flow and on each of its revisions (null: none of that kind). */
interface FlowControlColumns {
  /** How many of its runs execute at once (per key). Written as a JSON string. */
  concurrency: JSONColumnType<ConcurrencyLimit | null, string | null | undefined, string | null>;
  /** How many of its runs start per period (per key). Written as a JSON string. */
  throttle: JSONColumnType<ThrottleLimit | null, string | null | undefined, string | null>;
  /** Seconds each run moves ahead of the others waiting for a concurrency slot. Written as a JSON string. */
  priority: JSONColumnType<PriorityRule | null, string | null | undefined, string | null>;
  /** Starts wait for quiet per key (the last one runs). Written as a JSON string. */
  debounce: JSONColumnType<DebounceSettings | null, string | null | undefined, string | null>;
  /** Starts gathered into one run per key. Written as a JSON string. */
  batch: JSONColumnType<BatchSettings | null, string | null | undefined, string | null>;
  /** How many of its starts are taken per period (per key); the others are skipped. Written as a JSON string. */
  rate_limit: JSONColumnType<RateLimit | null, string | null | undefined, string | null>;
  /** One queued or running run per key. Written as a JSON string. */
  singleton: JSONColumnType<Singleton | null, string | null | undefined, string | null>;
  /** How long a run may wait to start before it is cancelled, in seconds. */
  start_timeout_s: ColumnType<number | null, number | null | undefined, number | null>;
  /** The flow as a tool of the account's MCP endpoint (not a control: how it is offered). Written as a JSON string. */
  mcp: JSONColumnType<McpTool | null, string | null | undefined, string | null>;
}

/** A flow: a webhook trigger and ordered steps; the definition that runs is in `flow_revisions`. */
export interface FlowsTable extends FlowControlColumns {
  /** A UUID. */
  id: string;
  account_id: string;
  name: string;
  description: string;
  active: boolean;
  /** The trigger as saved, without its signing secret. Written as a JSON string. */
  trigger: JSONColumnType<TriggerSettings>;
  /** The steps as saved (node references as `nodes.<id>`). Written as a JSON string. */
  steps: JSONColumnType<StepInput[], string | undefined, string>;
  /** Steps run once when a run fails, as saved. Written as a JSON string. */
  on_failure: JSONColumnType<StepInput[], string | undefined, string>;
  /** A schedule trigger's next tick; null for other triggers and inactive flows. */
  schedule_next_at: Date | null;
  /** A schedule trigger's shortest interval between ticks in seconds, measured at save; null for other triggers. */
  schedule_interval_s: ColumnType<number | null, number | null | undefined, number | null>;
  /** Sealed; never returned. */
  signing_secret: string | null;
  webhook_id: string;
  revision: number;
  created_at: CreatedAt;
  modified_at: CreatedAt;
  deleted_at: Date | null;
}

/** One immutable saved definition of a flow. */
export interface FlowRevisionsTable extends FlowControlColumns {
  flow_id: string;
  revision: number;
  /** Written as JSON strings. */
  trigger: JSONColumnType<TriggerSettings>;
  /** Tasks resolved (node references copied in), options complete. */
  steps: JSONColumnType<StoredStep[]>;
  on_failure: JSONColumnType<StoredStep[], string | undefined, string>;
  created_at: CreatedAt;
}

/** A gateway: a public HTTP address whose mappings run flows. `subject` is its topic, unique across accounts. */
export interface GatewaysTable {
  /** A UUID. */
  id: string;
  account_id: string;
  subject: string;
  name: string;
  description: string;
  active: boolean;
  timeout_ms: number;
  /** At most `limit_requests` requests in any `limit_seconds` window. */
  limit_requests: number;
  limit_seconds: number;
  type: string;
  created_at: CreatedAt;
  modified_at: CreatedAt;
  deleted_at: Date | null;
}

/** A mapping of a gateway: requests with `method` on `path` (parameters as `:name`) run `flow_id`. */
export interface GatewayMappingsTable {
  /** A UUID. */
  id: string;
  gateway_id: string;
  account_id: string;
  method: string;
  path: string;
  /** `path` with each parameter written as `:`; unique per gateway and method among live mappings. */
  route: string;
  flow_id: string;
  created_at: CreatedAt;
  deleted_at: Date | null;
}

/** A storage stream of an account; its messages are in the Broker, as stream `id` in the account's scope. */
export interface StorageStreamsTable {
  account_id: string;
  name: string;
  id: string;
  description: string;
  /** Keep at most this many newest messages; null = no limit. */
  max_messages: number | null;
  /** Drop messages older than this many seconds; null = no limit. */
  max_age_s: number | null;
  created_at: CreatedAt;
  modified_at: CreatedAt;
}

/** A KV bucket of an account; its keys are in the Broker, as bucket `id` in the account's scope. */
export interface StorageKvBucketsTable {
  account_id: string;
  name: string;
  id: string;
  description: string;
  created_at: CreatedAt;
  modified_at: CreatedAt;
}

/** One server version of the public MCP registry's mirror (shared by every account). */
export interface McpRegistryServersTable {
  name: string;
  version: string;
  /** `active` or `deprecated` (deleted ones are removed). */
  status: string;
  is_latest: boolean;
  published_at: Date | null;
  updated_at: Date;
  /** The name in lower case. */
  name_search: string;
  /** The name and description in lower case. */
  search_text: string;
  /** The entry as answered: server.json fields plus `_meta`. Written as a JSON string. */
  entry: JSONColumnType<RegistryEntry>;
  seen_pass: number;
}

/** The mirror's sync state: one row (id 1). */
export interface McpRegistrySyncTable {
  id: number;
  upstream: string | null;
  generation: Generated<number>;
  completed_at: Date | null;
  watermark: Date | null;
  pass: Generated<number>;
  run_kind: "full" | "incremental" | null;
  run_since: Date | null;
  run_cursor: string | null;
  run_pages: Generated<number>;
  run_started_at: Date | null;
  run_max_updated: Date | null;
  lease_owner: string | null;
  lease_until: Date | null;
}

/** A run of a flow: its trigger data, each step's checkpoint, and its outcome. */
/** One step of a run: its record, and its output once it ended (see packages/core/src/engine/records.ts). */
export interface RunStepsTable {
  run_id: string;
  /** The step's name in the run's flow revision. */
  name: string;
  /** Status, attempts, error and timings, without the output. Written as JSON strings. */
  record: JSONColumnType<StepRecord>;
  /**
   * Any JSON value (not a `JSONColumnType`, which holds objects or null). Written once, as a
   * JSON string, in the write that ends the step; null until then.
   */
  output: ColumnType<unknown, string | null, string | null>;
}

export interface RunsTable {
  /** A UUIDv7: ids sort in creation order. */
  id: string;
  account_id: string;
  flow_id: string;
  /** The flow revision the run was accepted under, and runs. */
  revision: number;
  status: RunStatus;
  /** The trigger data: any JSON value (see `run_steps.output`). Written as a JSON string. */
  trigger: ColumnType<unknown, string, string>;
  error: string | null;
  replay_of: string | null;
  /** The webhook delivery that started it; unique per flow. */
  delivery_id: string | null;
  /** When a parked run is due to be queued again. */
  wake_at: Date | null;
  /** The run-stream entry whose worker executes it. */
  held_by: string | null;
  /** Until when that worker is known to be alive: it moves this ahead while it executes the run. */
  lease_until: Date | null;
  /** The API process waiting for its outcome (wait mode). */
  waiter: string | null;
  /** The event keys a parked run waits on (`wait.event`, `flow.call`): an event with one wakes it. */
  waiting_on: string[] | null;
  /** The run whose `flow.call` step started this one. */
  parent_run_id: string | null;
  /** How many `flow.call`s deep this run is (0 for a run started otherwise). */
  call_depth: Generated<number>;
  /** Of a flow with a concurrency limit: the key whose slot it takes (or waits for). */
  slot_key: string | null;
  /** Of a run waiting for a slot: its place in the key's queue (its acceptance, moved earlier by its priority). */
  slot_order: Date | null;
  /** Why a run waits before it can execute: `waiting for concurrency slot`, `waiting for throttle window`. */
  queue_reason: string | null;
  /** Of a flow with a throttle: the key it was given its turn under, and the turn (when it may start). */
  throttle_key: string | null;
  throttle_at: Date | null;
  /** The turn's number among its key's (1, 2, …, in the order of their times). */
  throttle_seq: string | null;
  /** Of a flow with a debounce: its key, and when the quiet it waits for began (the first start it replaced was accepted). */
  debounce_key: string | null;
  debounce_since: Date | null;
  /** Of a run holding a batch: its key, how many starts it holds (itself included) and the bytes of their trigger data. */
  batch_key: string | null;
  batch_size: number | null;
  batch_bytes: ColumnType<string | number | null, number | null | undefined, number | null>;
  /** Of a flow with a rate limit: the key it was admitted under (null: not admitted, or no rate limit). */
  rate_key: string | null;
  /** Of a flow with a singleton: the key it was admitted under, the one run of that key while it is queued or running. */
  singleton_key: string | null;
  /** The bulk replay job that started it. */
  replay_job_id: string | null;
  /** Why a flow control ended it without running it (`skipped`, `batched`, or `cancelled` before it started). */
  end_reason: string | null;
  /** The run that runs in its place: the later start that replaced it (debounce), the batch run that took its trigger. */
  taken_by: string | null;
  /** Bytes of its steps' outputs and error texts it has written, against its plan's `run_record_bytes`. */
  recorded_bytes: ColumnType<string | number, number | undefined, number>;
  /** The W3C trace context of the span that accepted it (OpenTelemetry), null when that process did not trace. */
  traceparent: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: CreatedAt;
  started_at: Date | null;
  finished_at: Date | null;
}

/** An event sent to an account's waiting runs (`POST /events`, `event.send`, a called run's end). */
export interface RunEventsTable {
  id: Generated<string>;
  account_id: string;
  key: string;
  /** Any JSON value (see `run_steps.output`). Written as a JSON string. */
  data: ColumnType<unknown, string, string>;
  /** What it counts for in its account's `event_bytes` (its key and data), given back when it goes. */
  bytes: Generated<number>;
  created_at: CreatedAt;
}

/** What an account keeps in the database, counted as it is written and deleted (see migration 20261128070000). */
export interface AccountStorageTable {
  account_id: string;
  /** Bytes of its events (`run_events`): keys and data as JSON. */
  event_bytes: ColumnType<string | number, number | undefined, number>;
  /** Bytes of its flows' revisions (`flow_revisions`): trigger, steps and settings as JSON. */
  flow_revision_bytes: ColumnType<string | number, number | undefined, number>;
}

/** A bulk replay: the runs of a flow matching `filter`, accepted before `before_id`, replayed a window at a time. */
export interface ReplayJobsTable {
  /** A UUIDv7. */
  id: string;
  account_id: string;
  flow_id: string;
  status: Generated<"running" | "done" | "cancelled">;
  /** As asked. Written as a JSON string. */
  filter: JSONColumnType<ReplayJobFilter>;
  before_id: string;
  /** The last run replayed. */
  cursor: string | null;
  /** Its replays from this id on may be under way still; those before it have ended. */
  underway_from: string | null;
  /** How many runs matched when the job was made. */
  matched: number;
  /** How many replays it has started. */
  started: Generated<number>;
  created_at: CreatedAt;
  finished_at: Date | null;
}

/** A delivery id (or a schedule's tick) that started a run of a flow: at most one run each, within the flow's window. */
export interface RunDeliveriesTable {
  flow_id: string;
  delivery_id: string;
  run_id: string;
  created_at: Generated<Date>;
}

/**
 * A flow's rate-limit tally of one key: the starts it took, per bucket of `width_ms` of
 * acceptance time, complete from `since_bucket` on (see the rate_limit_tallies migration).
 * Written by `rate_limit_judge`; int8 columns read as strings.
 */
export interface RateLimitTalliesTable {
  id: GeneratedAlways<string>;
  flow_id: string;
  rate_key: string;
  width_ms: string;
  since_bucket: string;
}

/**
 * A throttled key's turns, the ones a turn can still be judged by (the throttle_turns
 * migration): written by `throttle_take`, removed a day past by run retention.
 */
export interface ThrottleTurnsTable {
  flow_id: string;
  throttle_key: string;
  /** The turn's number among its key's (1, 2, …, in the order of their times). */
  seq: number;
  at: Date;
}

/** Starts a tally's key took in one bucket of acceptance time. */
export interface RateLimitTallyBucketsTable {
  tally_id: string;
  bucket: string;
  taken: number;
}

export interface Database {
  accounts: AccountsTable;
  users: UsersTable;
  memberships: MembershipsTable;
  auth_sessions: AuthSessionsTable;
  refresh_tokens: RefreshTokensTable;
  mfa_challenges: MfaChallengesTable;
  user_totp: UserTotpTable;
  passkeys: PasskeysTable;
  passkey_registrations: PasskeyRegistrationsTable;
  api_keys: ApiKeysTable;
  invitations: InvitationsTable;
  password_resets: PasswordResetsTable;
  secrets: SecretsTable;
  node_templates: NodeTemplatesTable;
  flows: FlowsTable;
  flow_revisions: FlowRevisionsTable;
  gateways: GatewaysTable;
  gateway_mappings: GatewayMappingsTable;
  storage_streams: StorageStreamsTable;
  storage_kv_buckets: StorageKvBucketsTable;
  runs: RunsTable;
  run_steps: RunStepsTable;
  run_deliveries: RunDeliveriesTable;
  rate_limit_tallies: RateLimitTalliesTable;
  rate_limit_tally_buckets: RateLimitTallyBucketsTable;
  throttle_turns: ThrottleTurnsTable;
  replay_jobs: ReplayJobsTable;
  run_events: RunEventsTable;
  account_storage: AccountStorageTable;
  mcp_registry_servers: McpRegistryServersTable;
  mcp_registry_sync: McpRegistrySyncTable;
}

export type Account = Selectable<AccountsTable>;
export type NewAccount = Insertable<AccountsTable>;
export type AccountUpdate = Updateable<AccountsTable>;
export type User = Selectable<UsersTable>;
export type NewUser = Insertable<UsersTable>;
export type Membership = Selectable<MembershipsTable>;
export type NewMembership = Insertable<MembershipsTable>;
