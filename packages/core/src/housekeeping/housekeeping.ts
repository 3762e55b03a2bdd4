import type { Database } from "@platform/db";
import { type Kysely, sql } from "kysely";
import type { Broker, Scope } from "../broker/port.ts";
import type { Logger } from "../logger.ts";
import type { PeriodicJob } from "../worker/periodic.ts";
import { EXPIRY_RULES, type ExpiryRule } from "./rules.ts";

/** A consumer group whose dead members housekeeping forgets. */
export interface ConsumerGroupRef {
  scope: Scope;
  stream: string;
  group: string;
}

export interface HousekeepingOptions {
  db: Kysely<Database>;
  broker: Broker;
  /** The groups of the platform's consumers (see `platformJobs`). */
  groups: ConsumerGroupRef[];
  /** Default: EXPIRY_RULES. */
  rules?: ExpiryRule[];
  /** The clock rows are judged by (default: this process's). */
  now?: () => Date;
  /** Rows removed per statement (default 500): each batch locks only its own rows, briefly. */
  batchSize?: number;
  /**
   * How long after expiry a row goes (default 60 s), so a request that read a row just
   * before it expired, or a process whose clock is a little behind, never finds it gone.
   */
  graceMs?: number;
  /** A group member holding nothing and idle this long is a stopped worker's name (default 1 h). */
  consumerIdleMs?: number;
}

export interface HousekeepingReport {
  /** Rows removed per table. */
  removed: Record<string, number>;
  /** Member names forgotten, per `stream/group`. */
  consumers: Record<string, string[]>;
}

/** Deletes one batch of a rule's expired rows after `after` (in key order); returns them and the last key looked at. */
async function deleteBatch(
  db: Kysely<Database>,
  rule: ExpiryRule,
  cutoff: Date,
  after: string | undefined,
  batchSize: number,
): Promise<{ removed: number; last: string | null }> {
  const table = sql.table(rule.table);
  const key = sql.ref(rule.key);
  const expired = "expiresAt" in rule ? sql`${sql.ref(rule.expiresAt)} < ${cutoff}` : rule.expired(cutoff);
  const from = after === undefined ? sql`true` : sql`${key} > ${after}`;
  // Rows a request holds are skipped, not waited for: the next pass takes them.
  const result = await sql<{ removed: number; last: string | null }>`
    with doomed as (
      select ${key} as key from ${table}
      where ${from} and ${expired}
      order by ${key} limit ${batchSize}
      for update skip locked
    ), gone as (
      delete from ${table} where ${key} in (select key from doomed) returning 1
    )
    select (select count(*)::int from gone) as removed, (select max(key) from doomed) as last`.execute(db);
  const row = result.rows[0];
  return { removed: row?.removed ?? 0, last: row?.last ?? null };
}

/**
 * Removes what has expired: every rule's rows, batch by batch, and the names of stopped
 * workers from the consumer groups. Safe to run in several processes at once.
 */
export async function housekeep(options: HousekeepingOptions, signal?: AbortSignal): Promise<HousekeepingReport> {
  const batchSize = options.batchSize ?? 500;
  const now = options.now?.() ?? new Date();
  const cutoff = new Date(now.getTime() - (options.graceMs ?? 60_000));
  const report: HousekeepingReport = { removed: {}, consumers: {} };
  for (const rule of options.rules ?? EXPIRY_RULES) {
    let removed = 0;
    let after: string | undefined;
    while (!signal?.aborted) {
      const batch = await deleteBatch(options.db, rule, cutoff, after, batchSize);
      removed += batch.removed;
      if (batch.last === null) break;
      after = batch.last;
    }
    report.removed[rule.table] = removed;
  }
  for (const { scope, stream, group } of options.groups) {
    if (signal?.aborted) break;
    const names = await options.broker.removeIdleConsumers(scope, stream, group, options.consumerIdleMs ?? 3_600_000);
    if (names.length > 0) report.consumers[`${stream}/${group}`] = names;
  }
  return report;
}

/** Housekeeping as a periodic job: once every `everyMs` (default 10 minutes) across the deployment. */
export function housekeepingJob(options: HousekeepingOptions, everyMs = 600_000): PeriodicJob {
  return {
    name: "housekeeping",
    everyMs,
    async run({ signal, logger }: { signal: AbortSignal; logger: Logger }) {
      const report = await housekeep(options, signal);
      const removed = Object.values(report.removed).reduce((sum, n) => sum + n, 0);
      const forgotten = Object.values(report.consumers).reduce((sum, names) => sum + names.length, 0);
      if (removed + forgotten > 0) logger.info(report, "housekeeping removed expired data");
    },
  };
}
