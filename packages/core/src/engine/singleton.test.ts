import { beforeAll, describe, expect, test } from "bun:test";
import { databaseBackends } from "@platform/db/testing";
import { sql } from "kysely";
import { createSingletons } from "./singleton.ts";
import { controlTestBed, insertAccountWithFlow } from "./test-fixtures.ts";

/**
 * Singletons in `skip` mode, on PGlite and PostgreSQL, with runs written by hand: the starts
 * a worker takes together are judged in one statement, in the order they came, and each key
 * still has at most one run queued or running.
 */
const HOLDER = "1-1/1";
const SKIP = { mode: "skip" as const, key: null };

for (const { backend, skip } of databaseBackends()) {
  describe.skipIf(Boolean(skip))(`singletons judged together on ${backend}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    const accountId = `acct-singleton-${backend}`;
    const flowId = crypto.randomUUID();
    const bed = controlTestBed(backend);
    beforeAll(() => insertAccountWithFlow(bed.db, accountId, flowId));

    const singletons = () => createSingletons(bed.deps());

    /** `count` runs held as a worker that took them holds them, oldest first. */
    async function held(count: number, holder = HOLDER): Promise<string[]> {
      const ids = Array.from({ length: count }, () => Bun.randomUUIDv7());
      await sql`
        insert into runs (id, account_id, flow_id, revision, status, trigger, held_by)
        select id, ${accountId}, ${flowId}, 1, 'running', '{}', ${holder} from unnest(${ids}::uuid[]) as id`.execute(
        bed.db,
      );
      return ids;
    }
    const statusOf = async (ids: string[]) =>
      await bed.db
        .selectFrom("runs")
        .select(["id", "status", "end_reason", "singleton_key"])
        .where("id", "in", ids)
        .execute();

    test("of the starts of a key taken together, the first runs and the others are skipped naming it", async () => {
      const ids = await held(6);
      const keys = ["a", "b", "a", "a", "b", "c"];
      const limits = singletons();
      const taken = await Promise.all(
        ids.map((id, i) => limits.take({ id, flowId, holder: HOLDER }, SKIP, keys[i] as string)),
      );
      expect(taken).toEqual([true, true, false, false, false, true]);
      const rows = new Map((await statusOf(ids)).map((row) => [row.id, row]));
      expect(rows.get(ids[2] as string)).toMatchObject({
        status: "skipped",
        end_reason: `singleton: run ${ids[0]} is queued or running`,
        singleton_key: null,
      });
      expect(rows.get(ids[4] as string)?.end_reason).toBe(`singleton: run ${ids[1]} is queued or running`);
      expect(rows.get(ids[5] as string)).toMatchObject({ status: "running", singleton_key: "c" });

      // A later delivery of an admitted start is admitted again; the key's next start waits for its end.
      expect(await limits.take({ id: ids[0] as string, flowId, holder: HOLDER }, SKIP, "a")).toBe(true);
      const [later] = await held(1);
      expect(await limits.take({ id: later as string, flowId, holder: HOLDER }, SKIP, "a")).toBe(false);
      await sql`update runs set status = 'succeeded', singleton_key = null where id = ${ids[0]}`.execute(bed.db);
      const [after] = await held(1);
      expect(await limits.take({ id: after as string, flowId, holder: HOLDER }, SKIP, "a")).toBe(true);
    }, 60_000);

    test("a start its delivery no longer holds is neither admitted nor skipped", async () => {
      const [id] = await held(1, "2-1/1");
      expect(await singletons().take({ id: id as string, flowId, holder: HOLDER }, SKIP, "held elsewhere")).toBe(false);
      expect(await statusOf([id as string])).toEqual([
        { id: id as string, status: "running", end_reason: null, singleton_key: null },
      ]);
    }, 60_000);
  });
}
