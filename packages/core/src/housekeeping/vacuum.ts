import { type VacuumedTable, vacuumTablesDue } from "@platform/db";
import type { Services } from "../services.ts";
import type { PeriodicJob } from "../worker/periodic.ts";

/**
 * Autovacuum's work, for an embedded database (PGlite has none: see packages/db/src/vacuum.ts),
 * every ten seconds: often enough that each table's VACUUM has only seconds of changes to go
 * over, not a day's (at 1,500 webhooks a second, 10–70 ms for a broker table, 70–230 ms for
 * the pages of the day's runs filled since the last one).
 */
export function vacuumJob(services: Pick<Services, "db">, everyMs = 10_000): PeriodicJob {
  return {
    name: "vacuum",
    everyMs,
    async run({ signal, logger }) {
      const tables = await vacuumTablesDue(services.db, signal);
      const done = ({ table, vacuumed, analyzed, ms }: VacuumedTable) =>
        `${table} ${[vacuumed && "vacuumed", analyzed && "analyzed"].filter(Boolean).join(" and ")} in ${Math.round(ms)} ms`;
      if (tables.length > 0) logger.debug({ tables: tables.map(done) }, "tables vacuumed or analyzed");
    },
  };
}
