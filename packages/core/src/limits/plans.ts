import { readFile } from "node:fs/promises";
import { z } from "zod";

/**
 * Per-account limits on what accounts share (the Broker's memory, the engine's queue, the
 * database), by price plan (`accounts.plan`, the plans the price catalog names in `metadata.plan`).
 */

export const LIMITS = {
  /** Bytes of stream messages the account keeps, all its streams together. */
  stream_bytes: { unit: "bytes", per: "account", fallback: 1024 * 1024 * 1024 },
  /** Bytes of KV keys and values the account keeps, all its buckets together. */
  kv_bytes: { unit: "bytes", per: "account", fallback: 256 * 1024 * 1024 },
  /** Bytes of events the account keeps (`POST /events`, `event.send`; each kept 31 days): keys and data as JSON. */
  event_bytes: { unit: "bytes", per: "account", fallback: 1024 * 1024 * 1024 },
  /** Bytes of flow revisions the account keeps (one per save, kept for good): trigger, steps and settings as JSON. */
  flow_revision_bytes: { unit: "bytes", per: "account", fallback: 1024 * 1024 * 1024 },
  /** Bytes one run may record in all: its steps' outputs (as JSON) and error texts together. */
  run_record_bytes: { unit: "bytes", per: "run", fallback: 256 * 1024 * 1024 },
  /** Messages one stream keeps (a stream whose `max_messages` is lower never meets it). */
  stream_messages: { unit: "messages", per: "stream", fallback: 10_000_000 },
  /** Runs started in any minute, however they start. */
  runs_per_minute: { unit: "runs", per: "account", fallback: 600_000 },
  /** Deliveries one webhook takes in any second. */
  webhook_deliveries_per_second: { unit: "deliveries", per: "flow", fallback: 10_000 },
  /** Flows with an active schedule trigger the account has at once. */
  schedules: { unit: "schedules", per: "account", fallback: 100 },
  /**
   * The shortest time between two ticks of one schedule, in seconds (a floor, not a ceiling:
   * a schedule whose next ticks come closer than this is refused when saved active).
   */
  schedule_interval_seconds: { unit: "seconds", per: "flow", fallback: 1 },
  /**
   * Outbound requests (`http.request` and `mcp.call` steps) of the account in flight at once in one worker
   * process, all its runs together; one past it waits for a slot. Per process, not across
   * them: a deployment of n workers lets an account have n times this in flight.
   */
  outbound_requests_in_flight: { unit: "requests", per: "account", fallback: 100 },
  /** Outbound requests one run has in flight at once (for-each items, parallel branches); one past it waits for a slot. */
  run_outbound_requests_in_flight: { unit: "requests", per: "run", fallback: 20 },
} as const;

export type LimitName = keyof typeof LIMITS;
export type PlanLimits = Record<LimitName, number>;

export const DEFAULT_LIMITS: PlanLimits = Object.fromEntries(
  Object.entries(LIMITS).map(([name, { fallback }]) => [name, fallback]),
) as PlanLimits;

const planLimitsFile = z.record(
  z.string().min(1),
  z.strictObject(
    Object.fromEntries(Object.keys(LIMITS).map((name) => [name, z.number().int().min(1).optional()])) as Record<
      LimitName,
      z.ZodOptional<z.ZodNumber>
    >,
  ),
);

/** The limits of each plan: the defaults, and over them what `PLAN_LIMITS_FILE` sets for a plan. */
export type PlanCatalog = (plan: string) => PlanLimits;

/**
 * Reads `PLAN_LIMITS_FILE` (`{"free": {"kv_bytes": 104857600}, "team": {...}}`, each plan's
 * limits over the defaults); a file that cannot be read or does not fit stops start-up.
 */
export async function loadPlanLimits(file: string | undefined): Promise<PlanCatalog> {
  if (!file) return () => DEFAULT_LIMITS;
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(file, "utf8"));
  } catch (error) {
    throw new Error(`PLAN_LIMITS_FILE ${file} cannot be read as JSON: ${(error as Error).message}`);
  }
  const result = planLimitsFile.safeParse(parsed);
  if (!result.success) {
    const problems = result.error.issues.map((issue) => `${issue.path.join(".") || "file"}: ${issue.message}`);
    throw new Error(`PLAN_LIMITS_FILE ${file} is not limits by plan: ${problems.join("; ")}`);
  }
  const plans = new Map(
    Object.entries(result.data).map(([plan, limits]) => [
      plan,
      { ...DEFAULT_LIMITS, ...Object.fromEntries(Object.entries(limits).filter(([, value]) => value !== undefined)) },
    ]),
  );
  return (plan) => plans.get(plan) ?? DEFAULT_LIMITS;
}
