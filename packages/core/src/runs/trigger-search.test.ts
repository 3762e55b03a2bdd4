import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { DatabaseHandle } from "@platform/db";
import { databaseBackends, openTestDatabase } from "@platform/db/testing";
import { sql } from "kysely";
import { triggerHolds } from "./trigger-search.ts";

/**
 * Run search by trigger data must be answerable from the GIN index: the filter it builds is
 * one the planner can give `runs_trigger_search` (with table scans ruled out, the plan uses
 * it; a filter of another shape, `trigger->'body'->>... = ...`, could only scan).
 */
for (const { backend, skip } of databaseBackends()) {
  describe.skipIf(Boolean(skip))(`run search by trigger data on ${backend}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let database: DatabaseHandle;
    beforeAll(async () => {
      database = await openTestDatabase(backend);
    });
    afterAll(() => database.close());

    test("a path and a value are answered from the trigger index", async () => {
      const plan = await database.db.transaction().execute(async (trx) => {
        await sql`set local enable_seqscan = off`.execute(trx);
        const query = trx
          .selectFrom("runs")
          .select("id")
          .where(triggerHolds("body.data.object.customer", "42"))
          .compile();
        const { rows } = await sql
          .raw<{ "QUERY PLAN": string }>(
            `explain ${query.sql.replaceAll(/\$(\d+)/g, (_, n) => `'${query.parameters[Number(n) - 1]}'`)}`,
          )
          .execute(trx);
        return rows.map((row) => row["QUERY PLAN"]).join("\n");
      });
      // Each day's partition has its own copy of the index (runs_legacy_trigger_search, runs_20261203_trigger_idx).
      expect(plan).toMatch(/Index Scan on runs_\w*trigger_(search|idx)/);
      expect(plan).not.toContain("Seq Scan");
    });
  });
}
