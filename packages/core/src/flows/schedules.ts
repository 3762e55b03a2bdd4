import type { ScheduleSettings } from "@platform/db";
import { Cron } from "croner";

/**
 * Schedule triggers: a cron expression (five fields, or six with seconds first) read in an
 * IANA time zone, daylight-saving changes handled as croner handles them (a time that does
 * not exist that day is skipped, one that happens twice fires once). The settings
 * (`ScheduleSettings`) are a stored shape, typed in @platform/db.
 */

/** A tick started this long after its time is still on time; later, it was missed (see `catch_up`). */
export const ON_TIME_MS = 60_000;

const cronOf = (settings: Pick<ScheduleSettings, "cron" | "timezone">) =>
  new Cron(settings.cron, { timezone: settings.timezone, paused: true });

/** Why the zone is not one, or null. */
export function timezoneProblem(timezone: string): string | null {
  try {
    new Intl.DateTimeFormat("en", { timeZone: timezone });
    return null;
  } catch {
    return `must be an IANA time zone such as Europe/Berlin or UTC (not ${JSON.stringify(timezone)})`;
  }
}

/** Why the expression cannot be scheduled, or null. */
export function cronProblem(cron: string): string | null {
  try {
    const next = new Cron(cron, { paused: true }).nextRun();
    return next ? null : "never fires (no date matches it)";
  } catch (error) {
    return `is not a cron expression: ${(error as Error).message.replace(/^CronPattern: /, "")}`;
  }
}

/** The next `count` fire times after `after`. */
export function fireTimes(settings: Pick<ScheduleSettings, "cron" | "timezone">, after: Date, count: number): Date[] {
  return cronOf(settings).nextRuns(count, after);
}

/** The first fire time after `after`, or null when there is none. */
export function nextFireTime(settings: Pick<ScheduleSettings, "cron" | "timezone">, after: Date): Date | null {
  return cronOf(settings).nextRun(after);
}

/** Most ticks one look at a flow walks (a second-by-second schedule missed for long is cut here). */
const MAX_TICKS_PER_LOOK = 3600;

/**
 * What a due schedule starts now: every tick from `due` up to now that is on time (at most
 * ON_TIME_MS late: the scheduler looks once a second, so a second-by-second schedule has a
 * tick or two due at each look), and for the older ticks (no worker was up) nothing (`skip`)
 * or one run for the latest of them (`latest`). Answers the ticks to start, oldest first,
 * and the next fire time after now.
 */
export function dueTicks(settings: ScheduleSettings, due: Date, now: Date): { ticks: Date[]; next: Date | null } {
  const cron = cronOf(settings);
  const onTime: Date[] = [];
  let latestMissed: Date | null = null;
  let tick: Date | null = due;
  for (let walked = 0; tick && tick.getTime() <= now.getTime() && walked < MAX_TICKS_PER_LOOK; walked++) {
    if (now.getTime() - tick.getTime() <= ON_TIME_MS) onTime.push(tick);
    else latestMissed = tick;
    tick = cron.nextRun(tick);
  }
  const next = tick && tick.getTime() > now.getTime() ? tick : cron.nextRun(now);
  const caughtUp = settings.catch_up === "latest" && latestMissed ? [latestMissed] : [];
  return { ticks: [...caughtUp, ...onTime], next };
}
