import type { Database, ScheduleSettings } from "@platform/db";
import { type Kysely, sql } from "kysely";
import { DomainError, invalidInput } from "../errors.ts";
import type { AccountPlan } from "../limits/account-limits.ts";
import { fireTimes } from "./schedules.ts";

/**
 * What a plan allows of schedule triggers: ticks at least `schedule_interval_seconds` apart,
 * and at most `schedules` flows of an account with an active one. Checked when a flow is
 * saved active with a schedule (created, updated, or activated by an update); a flow saved
 * inactive, or one that stops being a schedule, is never refused, so a flow can always be
 * switched off. Lowering a plan leaves the schedules saved before it ticking until their
 * next save.
 */

/** Ticks looked at for a schedule's shortest interval: a minute and more of a schedule that ticks every second. */
export const INTERVAL_TICKS = 100;

/**
 * The shortest time between two of the schedule's next INTERVAL_TICKS ticks from `from`, in
 * seconds (ticks fall on whole seconds); null when it ticks once more or never again. A
 * schedule whose closest ticks come later than that (a few a day at one hour, the nights
 * a daylight-saving change shortens) is measured on the ticks it has in that stretch.
 */
export function shortestInterval(
  settings: Pick<ScheduleSettings, "cron" | "timezone">,
  from: Date = new Date(),
): number | null {
  const ticks = fireTimes(settings, from, INTERVAL_TICKS);
  let shortest = Number.POSITIVE_INFINITY;
  for (let index = 1; index < ticks.length; index++) {
    shortest = Math.min(shortest, (ticks[index] as Date).getTime() - (ticks[index - 1] as Date).getTime());
  }
  return Number.isFinite(shortest) ? Math.round(shortest / 1000) : null;
}

/** 400 naming `trigger.cron` and the limit when the schedule ticks more often than the plan allows. */
export function intervalProblem({ plan, limits }: AccountPlan, interval: number | null): DomainError | null {
  const limit = limits.schedule_interval_seconds;
  if (interval === null || interval >= limit) return null;
  const seconds = (n: number) => `${n.toLocaleString("en")} s`;
  return invalidInput(
    {
      path: "trigger.cron",
      message: `ticks as close as ${seconds(interval)} apart, closer than the ${seconds(limit)} the ${plan} plan allows (schedule_interval_seconds)`,
    },
    { details: { limit: { name: "schedule_interval_seconds", limit, used: interval, plan } } },
  );
}

/**
 * 409 naming the limit when the account has as many active schedules as its plan allows
 * besides `flowId` (the flow being saved, which is not counted). At save it runs in the
 * save's transaction after `lockSchedules`, so saves of one account count one at a time.
 */
export async function countProblem(
  db: Kysely<Database>,
  accountId: string,
  flowId: string | null,
  { plan, limits }: AccountPlan,
): Promise<DomainError | null> {
  const used = await countSchedules(db, accountId, flowId);
  const limit = limits.schedules;
  if (used < limit) return null;
  return new DomainError(
    "conflict",
    `the account has ${used.toLocaleString("en")} active schedules, the most the ${plan} plan allows (schedules); switch one off (active: false) or give it another trigger first`,
    { details: { limit: { name: "schedules", limit, used, plan } } },
  );
}

/** The account's flows with an active schedule trigger. */
const activeSchedules = (db: Kysely<Database>, accountId: string) =>
  db
    .selectFrom("flows")
    .where("account_id", "=", accountId)
    .where("active", "=", true)
    .where("deleted_at", "is", null)
    .where(sql<boolean>`trigger ->> 'type' = 'schedule'`);

/** How many active schedules the account has, `except` (a flow's id) left out. */
export async function countSchedules(db: Kysely<Database>, accountId: string, except: string | null = null) {
  let query = activeSchedules(db, accountId).select((eb) => eb.fn.countAll<string>().as("count"));
  if (except !== null) query = query.where("id", "<>", except);
  return Number((await query.executeTakeFirstOrThrow()).count);
}

/** The active schedule with the shortest interval (as measured at its save), or null when none has one. */
export async function closestSchedule(
  db: Kysely<Database>,
  accountId: string,
): Promise<{ flowId: string; interval: number } | null> {
  const row = await activeSchedules(db, accountId)
    .select(["id", "schedule_interval_s"])
    .where("schedule_interval_s", "is not", null)
    .orderBy("schedule_interval_s")
    .orderBy("id")
    .limit(1)
    .executeTakeFirst();
  return row ? { flowId: row.id, interval: row.schedule_interval_s as number } : null;
}

/** Holds the account's row until the transaction ends: the one lock saves of its active schedules take. */
export async function lockSchedules(db: Kysely<Database>, accountId: string): Promise<void> {
  await db.selectFrom("accounts").select("id").where("id", "=", accountId).forUpdate().execute();
}
