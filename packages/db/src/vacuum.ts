import { type Kysely, sql } from "kysely";
import type { Database } from "./schema.ts";

/**
 * ANALYZE samples 300 rows per unit of the statistics target: 3,000 rows at 10 rather than
 * PostgreSQL's default of 30,000 at 100: on the runs of a webhook bench (30,000 rows) it held
 * PGlite's thread 33–42 ms instead of 170. The estimates the platform's statements need (rows
 * per account or flow, how many are queued) are as good from the smaller sample.
 */
const ANALYZE_STATISTICS_TARGET = 10;

export interface VacuumedTable {
  /** Schema-qualified, as `format('%I.%I')` quotes it. */
  table: string;
  vacuumed: boolean;
  analyzed: boolean;
  ms: number;
}

interface DueTable {
  table: string;
  vacuum: boolean;
  analyze: boolean;
}

/**
 * Vacuuming a database that has no autovacuum: PGlite is PostgreSQL in one process, with no
 * launcher to start autovacuum workers. Without a VACUUM, a deleted or updated row's space is
 * never marked free, so every table whose rows come and go grows for good: the broker's
 * entries, lanes and deliveries, a run's row as its end rewrites it, runs deleted by
 * retention (in a minute of bench/webhooks.ts the database grew 8.2 KB per webhook, 4.4 KB of
 * it live; vacuumed, 4.4 KB); statistics are never refreshed, and transaction ids would run
 * out in the end.
 *
 * So the tables are judged as autovacuum judges them, by the server's own settings and the
 * statistics it keeps: a table is vacuumed once its dead rows pass
 * `autovacuum_vacuum_threshold + autovacuum_vacuum_scale_factor × rows`, or its rows inserted
 * since its last vacuum pass the insert threshold and scale factor (which keeps the
 * visibility map and frozen rows up to date), or its oldest unfrozen transaction id is older
 * than `autovacuum_freeze_max_age`; analyzed once the rows changed since its last analysis
 * pass the analyze threshold and scale factor. Catalogs count as tables (a partition made or
 * dropped leaves dead catalog rows); TOAST tables go with their tables.
 *
 * One table per statement, so the statements of everything else take turns with them: in
 * PGlite, a VACUUM holds the process's one thread for as long as it runs, which is about
 * as long as the pages changed since the last one (the visibility map skips the rest).
 */
export async function vacuumTablesDue(db: Kysely<Database>, signal?: AbortSignal): Promise<VacuumedTable[]> {
  const setting = (name: string) => sql`current_setting(${name})::float8`;
  const { rows } = await sql<DueTable>`
    with judged as (
      select format('%I.%I', s.schemaname, s.relname) as table,
        s.n_dead_tup > ${setting("autovacuum_vacuum_threshold")}
            + ${setting("autovacuum_vacuum_scale_factor")} * greatest(c.reltuples, 0)
          or s.n_ins_since_vacuum > ${setting("autovacuum_vacuum_insert_threshold")}
            + ${setting("autovacuum_vacuum_insert_scale_factor")} * greatest(c.reltuples, 0)
          or age(c.relfrozenxid) > ${setting("autovacuum_freeze_max_age")} as "vacuum",
        s.n_mod_since_analyze > ${setting("autovacuum_analyze_threshold")}
          + ${setting("autovacuum_analyze_scale_factor")} * greatest(c.reltuples, 0) as "analyze",
        s.n_dead_tup as dead
      from pg_stat_all_tables s join pg_class c on c.oid = s.relid
      where c.relkind in ('r', 'm') and s.schemaname <> 'pg_toast'
    )
    select "table", "vacuum", "analyze" from judged where "vacuum" or "analyze" order by dead desc`.execute(db);
  const vacuumed: VacuumedTable[] = [];
  for (const due of rows) {
    if (signal?.aborted) break;
    const started = performance.now();
    const table = sql.raw(due.table);
    try {
      if (due.vacuum) await sql`vacuum ${table}`.execute(db);
      if (due.analyze)
        await db.transaction().execute(async (trx) => {
          await sql`set local default_statistics_target = ${sql.lit(ANALYZE_STATISTICS_TARGET)}`.execute(trx);
          await sql`analyze ${table}`.execute(trx);
        });
    } catch (error) {
      // A table dropped since it was judged (a partition past retention) is no longer due.
      if ((error as { code?: string }).code === "42P01") continue;
      throw error;
    }
    vacuumed.push({ table: due.table, vacuumed: due.vacuum, analyzed: due.analyze, ms: performance.now() - started });
  }
  return vacuumed;
}
