import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { coreConfigSchema, openConfiguredDatabase, toCoreConfig } from "@platform/core";
import { createScratchPostgres, freeLoopbackPort, pgBouncerMissing } from "@platform/db/testing";
import { sql } from "kysely";
import { type RunningPgBouncer, startPgBouncer } from "../../../packages/db/src/pgbouncer.ts";

const missing = await pgBouncerMissing();

describe.skipIf(Boolean(missing))(`the platform behind PgBouncer${missing ? ` (skipped: ${missing})` : ""}`, () => {
  let scratch: Awaited<ReturnType<typeof createScratchPostgres>>;
  let bouncer: RunningPgBouncer;
  beforeAll(async () => {
    scratch = await createScratchPostgres();
    bouncer = await startPgBouncer(scratch.url, await freeLoopbackPort());
  });
  afterAll(async () => {
    await bouncer?.stop();
    await scratch?.drop();
  });

  test("processes starting together migrate a fresh database once, through DATABASE_DIRECT_URL, and then work through the pooler", async () => {
    const config = toCoreConfig(
      coreConfigSchema.parse({ DATABASE_URL: bouncer.through(scratch.url), DATABASE_DIRECT_URL: scratch.url }),
    );
    // Three at once: the migrations' session lock is taken on the direct connection, so one migrates and the others wait.
    const handles = await Promise.all([1, 2, 3].map(() => openConfiguredDatabase(config)));
    try {
      const applied = await sql<{ count: number; names: number }>`
        select count(*)::int as count, count(distinct name)::int as names from kysely_migration`.execute(
        handles[0]?.db as never,
      );
      expect(applied.rows[0]?.count).toBeGreaterThan(10);
      expect(applied.rows[0]?.names).toBe(applied.rows[0]?.count);
      // Every process reads and writes through the pooler.
      for (const handle of handles) {
        const flows = await handle.db.selectFrom("flows").select("id").execute();
        expect(flows).toEqual([]);
      }
      // LISTEN goes straight to the server, and hears a NOTIFY sent through the pooler.
      const heard = new Promise<string>((resolve) => {
        void handles[2]?.listen("pgbouncer_check", resolve);
      });
      await Bun.sleep(200);
      await handles[0]?.notify("pgbouncer_check", "hello");
      expect(await heard).toBe("hello");
    } finally {
      for (const handle of handles) await handle.close();
    }
  });
});
