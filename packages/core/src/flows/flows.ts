import { randomBytes } from "node:crypto";
import type { Database } from "@platform/db";
import { type Kysely, type Selectable, sql, type Transaction } from "kysely";
import type { Principal } from "../caller.ts";
import type { CoreConfig } from "../config.ts";
import { DomainError, invalidInput } from "../errors.ts";
import type { AccountLimits, AccountPlan } from "../limits/account-limits.ts";
import { openSealed, type Sealer } from "../sealing.ts";
import { requireSecretReads, secretReferences } from "../secrets/references.ts";
import type { DefinitionCache } from "../storage/definition-cache.ts";
import { unixSeconds } from "../time.ts";
import { signingSecretProblem } from "../webhooks/schemas.ts";
import { type McpCheckDeps, mcpCallProblems } from "./mcp-check.ts";
import { insertRevision } from "./revisions.ts";
import { countProblem, intervalProblem, lockSchedules, shortestInterval } from "./schedule-limits.ts";
import { fireTimes, nextFireTime } from "./schedules.ts";
import type { Flow, FlowInput } from "./schemas.ts";
import { resolveSteps } from "./steps.ts";
import { toolNameTaken, toolsChanged } from "./tool-names.ts";
import type { TriggerInput } from "./trigger-schemas.ts";
import { flowSecretSealingContext, webhookCacheKey } from "./webhook-flows.ts";

/**
 * Flows of an account: saved definitions (`flows`), one immutable revision per save
 * (`flow_revisions`), a webhook id per flow and its signing secret, sealed.
 */
export interface FlowsDeps {
  db: Kysely<Database>;
  sealer: Sealer;
  config: Pick<CoreConfig, "webhookBaseUrl">;
  /** Keeps flows by webhook id for the ingress; every change here drops them in every process. */
  storageDefinitions: DefinitionCache;
  /** The account's plan, which bounds its schedules (see schedule-limits.ts). */
  limits: Pick<AccountLimits, "of">;
  /** Reads the tools of `mcp.call` steps' servers, whose arguments a save checks (mcp-check.ts). */
  mcp: McpCheckDeps["mcp"];
}

type FlowRow = Selectable<Database["flows"]>;

const notFound = () => new DomainError("not_found", "flow not found");

/** 128 random bits in hex: the capability to start the flow from outside. */
const newWebhookId = () => randomBytes(16).toString("hex");

/** The trigger as read: a schedule's next five ticks with it (none while the flow is inactive). */
function triggerView(row: FlowRow): Flow["trigger"] {
  const { trigger } = row;
  if (trigger.type !== "schedule") return trigger;
  const next = row.active ? fireTimes(trigger, new Date(), 5).map((at) => at.toISOString()) : [];
  return { ...trigger, next_fire_times: next };
}

function toFlow(row: FlowRow, config: FlowsDeps["config"]): Flow {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    active: row.active,
    trigger: triggerView(row),
    steps: row.steps,
    on_failure: row.on_failure,
    concurrency: row.concurrency,
    throttle: row.throttle,
    priority: row.priority,
    rate_limit: row.rate_limit,
    singleton: row.singleton,
    start_timeout_s: row.start_timeout_s,
    debounce: row.debounce,
    batch: row.batch,
    mcp: row.mcp,
    webhook: { id: row.webhook_id, url: `${config.webhookBaseUrl}/${row.webhook_id}` },
    revision: row.revision,
    created: unixSeconds(row.created_at),
    modified: unixSeconds(row.modified_at),
  };
}

/**
 * The columns a save writes, but the secret: a schedule's next tick from now when the flow is
 * active, and its shortest interval (see `checkSchedule`).
 */
function definitionColumns(input: FlowInput, schedule: CheckedSchedule) {
  const trigger = input.trigger.settings;
  const scheduled = trigger.type === "schedule" && input.active;
  return {
    name: input.name,
    description: input.description,
    active: input.active,
    schedule_next_at: scheduled ? nextFireTime(trigger, new Date()) : null,
    schedule_interval_s: schedule.interval,
    trigger: JSON.stringify(trigger),
    steps: JSON.stringify(input.steps),
    on_failure: JSON.stringify(input.on_failure),
    concurrency: input.concurrency ? JSON.stringify(input.concurrency) : null,
    throttle: input.throttle ? JSON.stringify(input.throttle) : null,
    priority: input.priority ? JSON.stringify(input.priority) : null,
    rate_limit: input.rate_limit ? JSON.stringify(input.rate_limit) : null,
    singleton: input.singleton ? JSON.stringify(input.singleton) : null,
    start_timeout_s: input.start_timeout_s,
    debounce: input.debounce ? JSON.stringify(input.debounce) : null,
    batch: input.batch ? JSON.stringify(input.batch) : null,
    mcp: input.mcp ? JSON.stringify(input.mcp) : null,
  };
}

/**
 * The steps a save stores, resolved and checked (see `resolveSteps`); saving a reference to a
 * secret, inline or in a node template the flow copies, is using it: the caller must be
 * allowed to read it.
 */
export async function stepsToSave(deps: FlowsDeps, principal: Principal, input: FlowInput) {
  const { fields, ...resolved } = await resolveSteps(deps.db, principal.accountId, input.steps, input.on_failure);
  requireSecretReads(
    principal,
    fields.flatMap(({ origin, value }) => secretReferences(value, origin.join("."))),
  );
  const problems = await mcpCallProblems(deps, principal.accountId, resolved.steps, resolved.onFailure);
  if (problems.length > 0) throw invalidInput(problems);
  return resolved;
}

/** A schedule's shortest interval; with the plan when it is saved active (the plan allows the interval then). */
interface CheckedSchedule {
  interval: number | null;
  plan: AccountPlan | null;
}

/**
 * Measures a schedule trigger's interval and, when the flow is saved active, checks it
 * against the account's plan (400 past `schedule_interval_seconds`). Before the save's
 * transaction: the plan may be read from the database, whose one PGlite connection the
 * transaction would hold.
 */
async function checkSchedule(deps: FlowsDeps, accountId: string, input: FlowInput): Promise<CheckedSchedule> {
  const trigger = input.trigger.settings;
  if (trigger.type !== "schedule") return { interval: null, plan: null };
  const interval = shortestInterval(trigger);
  if (!input.active) return { interval, plan: null };
  const plan = await deps.limits.of(accountId);
  const problem = intervalProblem(plan, interval);
  if (problem) throw problem;
  return { interval, plan };
}

/** Whether a flow as stored (null: none yet) already counts as one of the account's active schedules. */
const isActiveSchedule = (row: Pick<FlowRow, "active" | "trigger"> | null) =>
  row?.active === true && row.trigger.type === "schedule";

/**
 * In the save's transaction, for a flow saved as an active schedule that was not one: the
 * account's schedules are locked and counted (409 past `schedules`).
 */
async function checkScheduleCount(
  trx: Transaction<Database>,
  accountId: string,
  current: FlowRow | null,
  schedule: CheckedSchedule,
): Promise<void> {
  if (schedule.plan === null || isActiveSchedule(current)) return;
  await lockSchedules(trx, accountId);
  const problem = await countProblem(trx, accountId, current?.id ?? null, schedule.plan);
  if (problem) throw problem;
}

/**
 * What saving `input` (over the flow `id`, for an update) would refuse of its schedule, for
 * `POST /flows/validate`: the interval and the count as a save checks them, the count
 * without a lock.
 */
export async function scheduleProblem(
  deps: FlowsDeps,
  accountId: string,
  id: string | null,
  input: FlowInput,
): Promise<DomainError | null> {
  let schedule: CheckedSchedule;
  try {
    schedule = await checkSchedule(deps, accountId, input);
  } catch (error) {
    if (error instanceof DomainError) return error;
    throw error;
  }
  if (schedule.plan === null) return null;
  const current =
    id === null
      ? null
      : ((await deps.db
          .selectFrom("flows")
          .selectAll()
          .where("account_id", "=", accountId)
          .where("id", "=", id)
          .where("deleted_at", "is", null)
          .executeTakeFirst()) ?? null);
  if (isActiveSchedule(current)) return null;
  return countProblem(deps.db, accountId, current?.id ?? null, schedule.plan);
}

/** The bytes of revisions the account's plan lets it keep; read before a save's transaction, as the plan is (see `checkSchedule`). */
async function revisionQuotaOf(deps: FlowsDeps, accountId: string): Promise<{ limit: number; plan: string }> {
  const { plan, limits } = await deps.limits.of(accountId);
  return { limit: limits.flow_revision_bytes, plan };
}

/** What a save (create or update) checks and resolves before its transaction. */
async function prepareSave(deps: FlowsDeps, principal: Principal, input: FlowInput) {
  if (input.priority && !input.concurrency) {
    throw invalidInput({
      path: "priority",
      message: "orders the runs waiting for a concurrency slot: set concurrency too",
    });
  }
  const { steps, onFailure } = await stepsToSave(deps, principal, input);
  const schedule = await checkSchedule(deps, principal.accountId, input);
  const revisionQuota = await revisionQuotaOf(deps, principal.accountId);
  return { steps, onFailure, schedule, revisionQuota };
}

/** Writes the saved definition as revision `revision` of flow `id`, within the account's quota. */
function writeRevision(
  trx: Transaction<Database>,
  accountId: string,
  id: string,
  revision: number,
  input: FlowInput,
  save: Awaited<ReturnType<typeof prepareSave>>,
): Promise<void> {
  const { steps, onFailure, revisionQuota } = save;
  const { concurrency, throttle, singleton } = input;
  return insertRevision(
    trx,
    accountId,
    {
      flowId: id,
      revision,
      trigger: input.trigger.settings,
      steps,
      onFailure,
      concurrency,
      throttle,
      priority: input.priority,
      rateLimit: input.rate_limit,
      singleton,
      startTimeoutS: input.start_timeout_s,
      debounce: input.debounce,
      batch: input.batch,
      mcp: input.mcp,
    },
    revisionQuota,
  );
}

export async function createFlow(deps: FlowsDeps, principal: Principal, input: FlowInput): Promise<Flow> {
  const accountId = principal.accountId;
  const save = await prepareSave(deps, principal, input);
  const { schedule } = save;
  const id = Bun.randomUUIDv7();
  const secret = input.trigger.signingSecret;
  const row = await deps.db
    .transaction()
    .execute(async (trx) => {
      await checkScheduleCount(trx, accountId, null, schedule);
      const created = await trx
        .insertInto("flows")
        .values({
          id,
          account_id: accountId,
          ...definitionColumns(input, schedule),
          signing_secret: secret === null ? null : deps.sealer.seal(secret, flowSecretSealingContext(id)),
          webhook_id: newWebhookId(),
          revision: 1,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      await writeRevision(trx, accountId, id, 1, input, save);
      return created;
    })
    .catch((error: unknown) => {
      throw toolNameTaken(error, input);
    });
  await toolsChanged(deps.storageDefinitions, accountId, [input.mcp]);
  return toFlow(row, deps.config);
}

/** The account's flows, oldest first; deleted ones are left out. */
export async function listFlows(deps: FlowsDeps, accountId: string): Promise<Flow[]> {
  const rows = await deps.db
    .selectFrom("flows")
    .selectAll()
    .where("account_id", "=", accountId)
    .where("deleted_at", "is", null)
    .orderBy("created_at")
    .orderBy("id")
    .execute();
  return rows.map((row) => toFlow(row, deps.config));
}

export async function getFlow(deps: FlowsDeps, accountId: string, id: string): Promise<Flow> {
  const row = await deps.db
    .selectFrom("flows")
    .selectAll()
    .where("account_id", "=", accountId)
    .where("id", "=", id)
    .where("deleted_at", "is", null)
    .executeTakeFirst();
  if (!row) throw notFound();
  return toFlow(row, deps.config);
}

/**
 * The sealed secret an update stores: the one it sends, else (with signature access) the
 * one stored, which must suit the service the update names; none without signature access.
 */
function secretToStore(deps: FlowsDeps, flowId: string, trigger: TriggerInput, stored: string | null): string | null {
  const { settings, signingSecret } = trigger;
  if (settings.type !== "webhook" || settings.access !== "signature") return null;
  const context = flowSecretSealingContext(flowId);
  if (signingSecret !== null) return deps.sealer.seal(signingSecret, context);
  if (stored === null) {
    throw invalidInput({ path: "trigger.signing_secret", message: "is required when access is signature" });
  }
  const plaintext = openSealed(deps.sealer, stored, context, `signing secret of flow ${flowId}`);
  const problem = settings.service ? signingSecretProblem(settings.service, plaintext) : null;
  if (problem) {
    throw invalidInput({
      path: "trigger.signing_secret",
      message: `the stored secret ${problem.replace(/^must/, "would have to")}; send a new one`,
    });
  }
  return stored;
}

/** A live flow of the account, locked for the rest of the transaction; 404 otherwise. */
async function lockFlow(trx: Transaction<Database>, accountId: string, id: string): Promise<FlowRow> {
  const row = await trx
    .selectFrom("flows")
    .selectAll()
    .where("account_id", "=", accountId)
    .where("id", "=", id)
    .where("deleted_at", "is", null)
    .forUpdate()
    .executeTakeFirst();
  if (!row) throw notFound();
  return row;
}

/**
 * Replaces the flow's definition (defaults apply again to what the update leaves out) and
 * writes it as the next revision. A flow that keeps signature access keeps its stored
 * secret when the update sends none. The webhook stays.
 */
export async function updateFlow(deps: FlowsDeps, principal: Principal, id: string, input: FlowInput): Promise<Flow> {
  const accountId = principal.accountId;
  const save = await prepareSave(deps, principal, input);
  const { schedule } = save;
  let previous: FlowRow["mcp"] = null;
  const row = await deps.db
    .transaction()
    .execute(async (trx) => {
      const current = await lockFlow(trx, accountId, id);
      previous = current.mcp;
      await checkScheduleCount(trx, accountId, current, schedule);
      const revision = current.revision + 1;
      const updated = await trx
        .updateTable("flows")
        .set({
          ...definitionColumns(input, schedule),
          signing_secret: secretToStore(deps, id, input.trigger, current.signing_secret),
          revision,
          modified_at: sql`now()`,
        })
        .where("id", "=", id)
        .returningAll()
        .executeTakeFirstOrThrow();
      await writeRevision(trx, accountId, id, revision, input, save);
      return updated;
    })
    .catch((error: unknown) => {
      throw toolNameTaken(error, input);
    });
  await deps.storageDefinitions.changed(...webhookCacheKey(row.webhook_id));
  await toolsChanged(deps.storageDefinitions, accountId, [previous, input.mcp]);
  return toFlow(row, deps.config);
}

/** Marks the flow deleted: it answers 404 from then on and its webhook starts nothing. */
export async function deleteFlow(deps: FlowsDeps, accountId: string, id: string): Promise<void> {
  const deleted = await deps.db
    .updateTable("flows")
    .set({ deleted_at: sql`now()`, modified_at: sql`now()` })
    .where("account_id", "=", accountId)
    .where("id", "=", id)
    .where("deleted_at", "is", null)
    .returning(["webhook_id", "mcp"])
    .executeTakeFirst();
  if (!deleted) throw notFound();
  await deps.storageDefinitions.changed(...webhookCacheKey(deleted.webhook_id));
  await toolsChanged(deps.storageDefinitions, accountId, [deleted.mcp]);
}

/** Gives the flow a new webhook id; the old URL stops working at once. The definition and revision stay. */
export async function regenerateWebhook(deps: FlowsDeps, accountId: string, id: string): Promise<Flow> {
  const { row, replaced } = await deps.db.transaction().execute(async (trx) => {
    const current = await lockFlow(trx, accountId, id);
    const updated = await trx
      .updateTable("flows")
      .set({ webhook_id: newWebhookId(), modified_at: sql`now()` })
      .where("id", "=", id)
      .returningAll()
      .executeTakeFirstOrThrow();
    return { row: updated, replaced: current.webhook_id };
  });
  await deps.storageDefinitions.changed(...webhookCacheKey(replaced));
  return toFlow(row, deps.config);
}
