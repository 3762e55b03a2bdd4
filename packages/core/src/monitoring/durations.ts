import { type Database, firstIdAt } from "@platform/db";
import { type Kysely, sql } from "kysely";

/** The runs a duration percentile looks at: those accepted within this window that have ended. */
export const DURATION_WINDOW_MS = 60 * 60 * 1000;

/**
 * A percentile (0.5, 0.95) of the duration, acceptance to end in whole milliseconds as a run's
 * `duration_ms` counts it, of the
 * account's runs accepted in the last `DURATION_WINDOW_MS` that succeeded or failed; null
 * while none has.
 */
export async function runDurationPercentile(
  db: Kysely<Database>,
  accountId: string,
  fraction: number,
  now = Date.now(),
): Promise<number | null> {
  const { rows } = await sql<{ value: number | null }>`
    select percentile_cont(${fraction}::float8) within group (
      order by floor(extract(epoch from finished_at) * 1000) - floor(extract(epoch from created_at) * 1000)) as value
    from runs
    where account_id = ${accountId} and id >= ${firstIdAt(now - DURATION_WINDOW_MS)}::uuid
      and status in ('succeeded', 'failed') and finished_at is not null`.execute(db);
  const value = rows[0]?.value;
  return value === null || value === undefined ? null : Math.round(Number(value));
}
