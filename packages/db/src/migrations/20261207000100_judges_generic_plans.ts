import { type Kysely, sql } from "kysely";

/**
 * The functions that judge a batch of starts one start at a time (`rate_limit_judge`,
 * `singleton_judge`, `throttle_take`; `debounce_judge` and `batch_judge` are created so) run
 * each of their statements on `runs` once a start, by a run id: PL/pgSQL keeps a plan per
 * statement, but left to choose (`plan_cache_mode = auto`) it plans each call afresh, as a
 * generic plan's estimate covers every partition of `runs` (a day each: the retention's, and
 * a week ahead) and looks dearer than a plan pruned to one. Planning grows with the partitions: 64 debounced starts
 * took 12 ms with 9 partitions and 19 ms with 40 (PostgreSQL 15), against 4–5 and 12 ms
 * with the generic plan, which prunes to the run's partition as it runs.
 */
const JUDGES = ["rate_limit_judge(jsonb)", "singleton_judge(jsonb)", "throttle_take(jsonb, text)"];

export async function up(db: Kysely<any>): Promise<void> {
  for (const judge of JUDGES)
    await sql`alter function ${sql.raw(judge)} set plan_cache_mode = force_generic_plan`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const judge of JUDGES) await sql`alter function ${sql.raw(judge)} reset plan_cache_mode`.execute(db);
}
