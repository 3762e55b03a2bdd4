import type { Database } from "@platform/db";
import type { Kysely } from "kysely";
import { type Broker, QuotaExceeded } from "../broker/port.ts";
import { DomainError } from "../errors.ts";
import { LIMITS, type LimitName, type PlanCatalog, type PlanLimits } from "./plans.ts";
import { createRateTaker } from "./rate-taker.ts";

/** An account's plan and the limits it gives. */
export interface AccountPlan {
  plan: string;
  limits: PlanLimits;
}

/** The rates limited per account or per flow, with their windows. */
const RATES = {
  runs_per_minute: 60,
  webhook_deliveries_per_second: 1,
} as const satisfies Partial<Record<LimitName, number>>;

export type RateName = keyof typeof RATES;

export interface AccountLimits {
  /** The account's plan and limits; kept per process for up to a minute, so a plan change takes that long. */
  of(accountId: string): Promise<AccountPlan>;
  /**
   * Counts one call against a rate (per account, or per `subject` such as a flow, under the
   * account) on the Broker, so every process shares it; 429 with Retry-After past it.
   */
  spend(accountId: string, rate: RateName, subject?: string): Promise<void>;
  /**
   * Takes up to `count` calls of a rate at once, in one Broker call (a look of the scheduler
   * at an account's due ticks): answers how many it was granted, the first `granted` of the
   * calls; past the limit it grants fewer (0 at it), never throws for it.
   */
  spendUpTo(accountId: string, rate: RateName, count: number): Promise<Grant>;
  /** How much of a rate is used now (the sliding window's count), without spending any. */
  current(accountId: string, rate: RateName, subject?: string): Promise<number>;
  close(): void;
}

/** What `spendUpTo` was granted, with the limit it was counted against. */
export interface Grant {
  granted: number;
  limit: number;
  plan: string;
}

/** How long a process keeps an account's plan. */
const PLAN_TTL_MS = 60_000;

const rateKey = (rate: RateName, subject?: string) => (subject ? `limit:${rate}:${subject}` : `limit:${rate}`);

export function createAccountLimits(deps: { db: Kysely<Database>; broker: Broker; plans: PlanCatalog }): AccountLimits {
  const plans = new Map<string, { plan: Promise<string>; until: number }>();
  const take = createRateTaker(deps.broker);

  function planOf(accountId: string): Promise<string> {
    const kept = plans.get(accountId);
    if (kept && kept.until > Date.now()) return kept.plan;
    const plan = deps.db
      .selectFrom("accounts")
      .select("plan")
      .where("id", "=", accountId)
      .executeTakeFirst()
      .then((row) => row?.plan ?? "free");
    plans.set(accountId, { plan, until: Date.now() + PLAN_TTL_MS });
    // A failed read is not kept.
    plan.catch(() => plans.delete(accountId));
    if (plans.size > 100_000) plans.delete(plans.keys().next().value as string);
    return plan;
  }

  async function of(accountId: string): Promise<AccountPlan> {
    const plan = await planOf(accountId);
    return { plan, limits: deps.plans(plan) };
  }

  return {
    of,
    async spend(accountId, rate, subject) {
      const { plan, limits } = await of(accountId);
      const limit = limits[rate];
      const taken = await take(accountId, rateKey(rate, subject), limit, RATES[rate]);
      if (taken.allowed) return;
      const per = LIMITS[rate].per === "flow" ? " of this flow" : "";
      throw new DomainError("rate_limited", `${rate}${per} is ${limit.toLocaleString("en")} on the ${plan} plan`, {
        retryAfterSeconds: taken.retryAfterSeconds,
        details: { limit: { name: rate, limit, plan } },
      });
    },
    async spendUpTo(accountId, rate, count) {
      const { plan, limits } = await of(accountId);
      const limit = limits[rate];
      if (count <= 0) return { granted: 0, limit, plan };
      const { granted } = await deps.broker.take(accountId, rateKey(rate), limit, RATES[rate], count);
      return { granted, limit, plan };
    },
    async current(accountId, rate, subject) {
      const { limits } = await of(accountId);
      return (await deps.broker.take(accountId, rateKey(rate, subject), limits[rate], RATES[rate], 0)).used;
    },
    close: () => plans.clear(),
  };
}

/**
 * A refused write as the API answers it: 413 when the account's bytes would pass the plan's
 * limit, 409 when a stream holds the messages the plan lets one keep; the message and
 * `details.limit` name the limit. Anything else passes through.
 */
export function quotaError(error: unknown, name: LimitName, plan: string): unknown {
  if (!(error instanceof QuotaExceeded)) return error;
  if (error.quota !== "entries") return bytesQuotaError(name, { limit: error.limit, used: error.used, plan });
  return new DomainError(
    "conflict",
    `the stream holds ${error.used.toLocaleString("en")} messages, the most one keeps on the ${plan} plan (${name}); set its max_messages to drop the oldest`,
    { details: { limit: { name, limit: error.limit, used: error.used, plan } } },
  );
}

/** The 413 of a write that would take the account's bytes (`used` now) past a byte limit of its plan, naming it. */
export function bytesQuotaError(name: LimitName, quota: { limit: number; used: number; plan: string }): DomainError {
  const { limit, used, plan } = quota;
  return new DomainError(
    "payload_too_large",
    `the account keeps ${used.toLocaleString("en")} of the ${limit.toLocaleString("en")} bytes the ${plan} plan allows (${name}); this write does not fit`,
    { details: { limit: { name, limit, used, plan } } },
  );
}
