import { closestSchedule, countSchedules } from "../flows/schedule-limits.ts";
import type { Services } from "../services.ts";
import { accountStorage } from "./account-storage.ts";
import { LIMITS, type LimitName } from "./plans.ts";

/** One limit of an account's plan and how much of it is used now. */
export interface LimitUsage {
  name: LimitName;
  limit: number;
  used: number;
  unit: (typeof LIMITS)[LimitName]["unit"];
  /** What the limit is counted over: the account, each stream, each flow, or each run. */
  per: (typeof LIMITS)[LimitName]["per"];
  /** For a limit per stream or flow: the one nearest its limit (the fullest stream, the busiest webhook, the schedule that ticks most often). */
  of?: string;
}

/** Streams, flows or runs looked at for a per-stream, -flow or -run use: an account with more shows its first (latest runs). */
const MOST_LOOKED_AT = 1000;

/**
 * An account's plan, each of its limits and the use now: bytes kept (as the Broker counts
 * them), the fullest stream's messages, the runs started in the last minute and the
 * busiest webhook's deliveries in the last second (sliding windows), the active schedules
 * and the shortest interval of one (0 with none), the outbound requests in flight in this
 * process (the account's, and its busiest run's).
 * The bytes its events and flow revisions keep in the database (counted as they are written
 * and deleted), and the most one of its latest runs recorded.
 */
export async function accountUsage(
  services: Pick<Services, "db" | "broker" | "limits" | "outbound">,
  accountId: string,
): Promise<{ plan: string; limits: LimitUsage[] }> {
  const { db, broker, limits } = services;
  const [{ plan, limits: plan_limits }, kept, streams, flows, runs] = await Promise.all([
    limits.of(accountId),
    broker.usage(accountId),
    db
      .selectFrom("storage_streams")
      .select(["id", "name"])
      .where("account_id", "=", accountId)
      .orderBy("name")
      .limit(MOST_LOOKED_AT)
      .execute(),
    db
      .selectFrom("flows")
      .select("id")
      .where("account_id", "=", accountId)
      .where("deleted_at", "is", null)
      .orderBy("id")
      .limit(MOST_LOOKED_AT)
      .execute(),
    limits.current(accountId, "runs_per_minute"),
  ]);
  const fullest = await largest(
    streams,
    (stream) => broker.length(accountId, stream.id),
    (stream) => stream.name,
  );
  const busiest = await largest(
    flows,
    (flow) => limits.current(accountId, "webhook_deliveries_per_second", flow.id),
    (flow) => flow.id,
  );
  const [scheduleCount, closest] = await Promise.all([countSchedules(db, accountId), closestSchedule(db, accountId)]);
  const busiestRun = services.outbound.busiestRun(accountId);
  const [stored, fullestRun] = await Promise.all([accountStorage(db, accountId), fullestRecentRun(db, accountId)]);
  const entry = (name: LimitName, used: number, of?: string): LimitUsage => ({
    name,
    limit: plan_limits[name],
    used,
    unit: LIMITS[name].unit,
    per: LIMITS[name].per,
    ...(of === undefined ? {} : { of }),
  });
  return {
    plan,
    limits: [
      entry("stream_bytes", kept.streamBytes),
      entry("kv_bytes", kept.kvBytes),
      entry("event_bytes", stored.event_bytes),
      entry("flow_revision_bytes", stored.flow_revision_bytes),
      entry("run_record_bytes", fullestRun?.bytes ?? 0, fullestRun?.id),
      entry("stream_messages", fullest.value, fullest.of),
      entry("runs_per_minute", runs),
      entry("webhook_deliveries_per_second", busiest.value, busiest.of),
      entry("schedules", scheduleCount),
      entry("schedule_interval_seconds", closest?.interval ?? 0, closest?.flowId),
      // In flight in the process that answers (the bounds hold per process): 0 in an API process that runs no worker.
      entry("outbound_requests_in_flight", services.outbound.accountInFlight(accountId)),
      entry("run_outbound_requests_in_flight", busiestRun?.inFlight ?? 0, busiestRun?.runId),
    ],
  };
}

/** Of the account's latest runs, the one that recorded the most, if any recorded anything (see record-budget.ts). */
async function fullestRecentRun(db: Services["db"], accountId: string): Promise<{ id: string; bytes: number } | null> {
  const recent = db
    .selectFrom("runs")
    .select(["id", "recorded_bytes"])
    .where("account_id", "=", accountId)
    .orderBy("id", "desc")
    .limit(MOST_LOOKED_AT)
    .as("recent");
  const row = await db
    .selectFrom(recent)
    .select(["id", "recorded_bytes"])
    .where("recorded_bytes", ">", 0)
    .orderBy("recorded_bytes", "desc")
    .limit(1)
    .executeTakeFirst();
  return row ? { id: row.id, bytes: Number(row.recorded_bytes) } : null;
}

/** The item with the largest value, and the value (0 and no item when there are none). */
async function largest<T>(
  items: T[],
  measure: (item: T) => Promise<number>,
  nameOf: (item: T) => string,
): Promise<{ value: number; of?: string }> {
  const values = await Promise.all(items.map(measure));
  let best: { value: number; of?: string } = { value: 0 };
  for (const [index, value] of values.entries()) {
    if (value > best.value) best = { value, of: nameOf(items[index] as T) };
  }
  return best;
}
