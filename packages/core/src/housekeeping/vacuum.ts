import { vacuumTablesDue } from "@platform/db";
import type { Services } from "../services.ts";
import type { PeriodicJob } from "../worker/periodic.ts";

/**
 * Autovacuum's work, for an embedded database (PGlite has none: see packages/db/src/vacuum.ts),
 * every ten seconds: often enough that each table's VACUUM has only a few seconds of changes
 * to go over, and so holds the process for milliseconds, not for as long as a day's.
 */
export function vacuumJob(services: Pick<Services, "db">, everyMs = 10_000): PeriodicJob {
  return {
    name: "vacuum",
    everyMs,
    async run({ signal, logger }) {
      const vacuumed = await vacuumTablesDue(services.db, signal);
      if (vacuumed.length > 0)
        logger.debug({ tables: vacuumed.map(({ table, ms }) => `${table} ${Math.round(ms)} ms`) }, "tables vacuumed");
    },
  };
}
