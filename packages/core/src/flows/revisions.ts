import type {
  BatchSettings,
  ConcurrencyLimit,
  Database,
  DebounceSettings,
  McpTool,
  PriorityRule,
  RateLimit,
  Singleton,
  StoredStep,
  ThrottleLimit,
  TriggerSettings,
} from "@platform/db";
import { type Kysely, sql } from "kysely";
import { countWithin, storageRefusal } from "../limits/account-storage.ts";

/**
 * Revisions: every save of a flow writes one immutable row, so a run executes exactly the
 * definition it was accepted under. This is the contract with the engine. What a revision
 * stores (`StoredStep`, `TriggerSettings`, the limits) is typed with the other stored shapes,
 * in @platform/db.
 */

export interface FlowRevision {
  flowId: string;
  revision: number;
  /** The trigger as saved, without its signing secret. */
  trigger: TriggerSettings;
  steps: StoredStep[];
  /** Run once when a run fails. */
  onFailure: StoredStep[];
  /** How many runs execute at once (per key value); null: no limit. */
  concurrency: ConcurrencyLimit | null;
  /** How many runs start per period (per key value); null: no throttle. */
  throttle: ThrottleLimit | null;
  /** The seconds by which each run moves ahead in the concurrency slot queue; null: none. */
  priority: PriorityRule | null;
  /** How many starts are taken per period (per key value), the others skipped; null: no rate limit. */
  rateLimit: RateLimit | null;
  /** One queued or running run per key value; null: none. */
  singleton: Singleton | null;
  /** Seconds a run may wait to start before it is cancelled; null: no start timeout. */
  startTimeoutS: number | null;
  /** How starts wait for quiet (per key value); null: no debounce. */
  debounce: DebounceSettings | null;
  /** How starts gather into batch runs (per key value); null: no batching. */
  batch: BatchSettings | null;
  /** The flow as a tool of the account's MCP endpoint; null: not a tool. */
  mcp: McpTool | null;
}

/**
 * Writes a revision, counting it against the account's `flow_revision_bytes` (its trigger,
 * steps and settings as JSON, in bytes of UTF-8) in the same statement. Revisions are kept
 * for good, so what they count is never given back. One that would pass the plan's limit is
 * not written: 413 naming the limit.
 */
export async function insertRevision(
  db: Kysely<Database>,
  accountId: string,
  revision: FlowRevision,
  quota: { limit: number; plan: string },
): Promise<void> {
  const columns = [
    JSON.stringify(revision.trigger),
    JSON.stringify(revision.steps),
    JSON.stringify(revision.onFailure),
    revision.concurrency ? JSON.stringify(revision.concurrency) : null,
    revision.throttle ? JSON.stringify(revision.throttle) : null,
    revision.priority ? JSON.stringify(revision.priority) : null,
    revision.rateLimit ? JSON.stringify(revision.rateLimit) : null,
    revision.singleton ? JSON.stringify(revision.singleton) : null,
    revision.debounce ? JSON.stringify(revision.debounce) : null,
    revision.batch ? JSON.stringify(revision.batch) : null,
    revision.mcp ? JSON.stringify(revision.mcp) : null,
  ] as const;
  const bytes = columns.reduce((sum, json) => sum + (json === null ? 0 : Buffer.byteLength(json)), 0);
  const [trigger, steps, onFailure, concurrency, throttle, priority, rateLimit, singleton, debounce, batch, mcp] =
    columns;
  const { rows } = await sql`
    with counted as (${countWithin(accountId, "flow_revision_bytes", bytes, quota.limit)})
    insert into flow_revisions (flow_id, revision, trigger, steps, on_failure, concurrency, throttle, priority,
      rate_limit, singleton, start_timeout_s, debounce, batch, mcp)
    select ${revision.flowId}::uuid, ${revision.revision}::integer, ${trigger}::jsonb, ${steps}::jsonb,
      ${onFailure}::jsonb, ${concurrency}::jsonb, ${throttle}::jsonb, ${priority}::jsonb, ${rateLimit}::jsonb,
      ${singleton}::jsonb,
      ${revision.startTimeoutS}::integer, ${debounce}::jsonb, ${batch}::jsonb, ${mcp}::jsonb
    from counted
    returning revision`.execute(db);
  if (rows.length === 0) throw await storageRefusal(db, accountId, "flow_revision_bytes", quota);
}

/**
 * One revision of one of the account's flows (deleted flows included: their accepted runs
 * still finish), or null. The revision rows themselves carry no account: the join checks it.
 */
export async function readRevision(
  db: Kysely<Database>,
  accountId: string,
  flowId: string,
  revision: number,
): Promise<FlowRevision | null> {
  const row = await db
    .selectFrom("flow_revisions")
    .innerJoin("flows", "flows.id", "flow_revisions.flow_id")
    .select([
      "flow_revisions.trigger",
      "flow_revisions.steps",
      "flow_revisions.on_failure",
      "flow_revisions.concurrency",
      "flow_revisions.throttle",
      "flow_revisions.priority",
      "flow_revisions.rate_limit",
      "flow_revisions.singleton",
      "flow_revisions.start_timeout_s",
      "flow_revisions.debounce",
      "flow_revisions.batch",
      "flow_revisions.mcp",
    ])
    .where("flows.account_id", "=", accountId)
    .where("flow_revisions.flow_id", "=", flowId)
    .where("flow_revisions.revision", "=", revision)
    .executeTakeFirst();
  if (!row) return null;
  return {
    flowId,
    revision,
    trigger: row.trigger,
    steps: row.steps,
    onFailure: row.on_failure,
    concurrency: row.concurrency,
    throttle: row.throttle,
    priority: row.priority,
    rateLimit: row.rate_limit,
    singleton: row.singleton,
    startTimeoutS: row.start_timeout_s,
    debounce: row.debounce,
    batch: row.batch,
    mcp: row.mcp,
  };
}
