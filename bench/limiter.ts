/**
 * The embedded limiter's cost per call (broker/postgres/single-process-limiter.ts), side by
 * side over source trees, in one process: each tree's limiter on a PGlite of its own (in a
 * fresh data directory, as embedded mode keeps it) takes turns of `--per-turn` calls
 * (default 20) on one key whose window never refuses, awaiting each turn's record as a
 * gateway does, for `--seconds` (default 3) a round. The window fills with every call of the
 * last second, as a busy gateway's does.
 *
 *   bun bench/limiter.ts --trees /tmp/before,. [--rounds 3]
 *
 * Prints calls/s and CPU µs per call (this process's, PGlite included: one thread).
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { flag, listFlag } from "./lib/args.ts";

const TREES = listFlag("trees", ["."]).map((tree) => resolve(tree));
const ROUNDS = flag("rounds", 3);
const SECONDS = flag("seconds", 3);
const PER_TURN = flag("per-turn", 20);

type Allow = (
  scope: string,
  key: string,
  limit: number,
  windowMs: number,
) => Promise<{ allowed: boolean; recorded?: Promise<void> }>;

const limiters = await Promise.all(
  TREES.map(async (tree) => {
    const { createSingleProcessLimiter } = await import(
      `${tree}/packages/core/src/broker/postgres/single-process-limiter.ts`
    );
    const { openDatabase } = await import(`${tree}/packages/db/src/connection.ts`);
    const { migrateToLatest } = await import(`${tree}/packages/db/src/migrator.ts`);
    // On disk, as embedded mode keeps it (an in-memory PGlite pays to grow its WAL in memory instead).
    const database = await openDatabase({ kind: "pglite", dataDir: mkdtempSync(join(tmpdir(), "bench-limiter-")) });
    await migrateToLatest(database.db);
    return { tree, database, create: () => createSingleProcessLimiter(database.db) as Allow };
  }),
);
try {
  for (let round = 1; round <= ROUNDS; round++) {
    for (const { tree, create } of limiters) {
      const allow = create();
      const key = `gateway:${round}`;
      const started = performance.now();
      const cpu = process.cpuUsage();
      let calls = 0;
      while (performance.now() - started < SECONDS * 1000) {
        const decisions = await Promise.all(Array.from({ length: PER_TURN }, () => allow("bench", key, 1e9, 1000)));
        await Promise.all(decisions.map((decision) => decision.recorded));
        calls += PER_TURN;
      }
      const spent = process.cpuUsage(cpu);
      console.log(
        `round ${round}`,
        tree.padEnd(24),
        `${Math.round(calls / SECONDS)} calls/s`.padStart(16),
        `${((spent.user + spent.system) / calls).toFixed(1)} µs CPU per call`.padStart(24),
      );
    }
  }
} finally {
  await Promise.all(limiters.map(({ database }) => database.close()));
}
