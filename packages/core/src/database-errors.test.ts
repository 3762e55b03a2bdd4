import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { DatabaseHandle } from "@platform/db";
import { databaseBackends, openTestDatabase } from "@platform/db/testing";
import { sql } from "kysely";
import { databaseErrorText, isRowFault } from "./database-errors.ts";

/** What a refused statement is blamed on decides whether a batch is split to find the rows at fault. */
for (const { backend, skip } of databaseBackends()) {
  describe.skipIf(Boolean(skip))(`database errors on ${backend}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let database: DatabaseHandle;
    beforeAll(async () => {
      database = await openTestDatabase(backend);
    });
    afterAll(() => database.close());

    const refusal = (statement: ReturnType<typeof sql>) =>
      statement.execute(database.db).then(
        () => undefined,
        (error: unknown) => error,
      );

    test("a value a check refuses is the row's fault; a run id with no partition yet is not", async () => {
      const badEmail = await refusal(sql`
        insert into users (id, email, password_hash, display_name) values ('u1', 'A@x.io', 'h', 'A')`);
      expect(isRowFault(badEmail)).toBe(true);
      // A year from now: no day partition holds it.
      const later = Bun.randomUUIDv7("hex", Date.now() + 365 * 86_400_000);
      const unplaced = await refusal(sql`
        insert into runs (id, account_id, flow_id, revision, status, trigger)
        values (${later}::uuid, 'a', ${later}::uuid, 1, 'queued', '{}')`);
      expect(String(unplaced)).toContain("no partition of relation");
      expect(isRowFault(unplaced)).toBe(false);
    });

    test("a value jsonb cannot hold is the row's fault, and its text says why with the error's detail", async () => {
      const nul = await refusal(sql`select ${'"a\\u0000b"'}::jsonb`);
      expect(isRowFault(nul)).toBe(true);
      expect(databaseErrorText(nul)).toBe("unsupported Unicode escape sequence (\\u0000 cannot be converted to text.)");
      expect(databaseErrorText(new Error("plain"))).toBe("plain");
    });
  });
}
