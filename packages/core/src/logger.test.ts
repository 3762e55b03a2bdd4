import { describe, expect, test } from "bun:test";
import { openDatabase } from "@platform/db";
import { databaseBackends, testEnv } from "@platform/db/testing";
import { sql } from "kysely";
import { capturedLogger } from "./captured-logger.ts";

for (const { backend, skip } of databaseBackends()) {
  describe.skipIf(Boolean(skip))(`logged database errors on ${backend}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    test("keep the code and message but never the values of the failed query", async () => {
      const database = await openDatabase(
        backend === "pglite" ? { kind: "pglite" } : { kind: "postgres", url: testEnv.DATABASE_URL as string },
      );
      const { logger, text } = capturedLogger();
      try {
        // One connection throughout: the temporary table lives on it.
        await database.db.connection().execute(async (db) => {
          await sql`create temporary table logged (email text primary key)`.execute(db);
          await sql`insert into logged values (${"ada@example.com"})`.execute(db);
          for (const query of [
            sql`insert into logged values (${"ada@example.com"})`,
            sql`select ${"sealed-v1.secret-token\u0000"}::text`,
          ]) {
            try {
              await query.execute(db);
              throw new Error("the query was expected to fail");
            } catch (error) {
              logger.error({ err: new Error("request failed", { cause: error }) }, "request failed");
              logger.error({ err: error }, "query failed");
            }
          }
        });
      } finally {
        await database.close();
      }
      const logged = text();
      expect(logged).toContain("duplicate key value violates unique constraint");
      expect(logged).toContain('"code":"23505"');
      expect(logged).toContain("22021");
      expect(logged).not.toContain("ada@example.com");
      expect(logged).not.toContain("secret-token");
    });
  });
}
