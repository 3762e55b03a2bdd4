import { beforeAll, describe, expect, test } from "bun:test";
import { databaseBackends } from "@platform/db/testing";
import { sql } from "kysely";
import { createBatches, joinedBatch } from "./batch.ts";
import { controlTestBed, insertAccountWithFlow } from "./test-fixtures.ts";

/**
 * Batches, on PGlite and PostgreSQL, with runs written by hand as a worker holds them: the
 * starts a worker takes together are judged in one statement, in the order they came, each
 * seeing what the ones before it did, by the rules of engine/batch.ts.
 */
const HOLDER = "1-1/1";
const OF_THREE = { maxItems: 3, timeoutMs: 60_000 };

for (const { backend, skip } of databaseBackends()) {
  describe.skipIf(Boolean(skip))(
    `batched starts judged together on ${backend}${skip ? ` (skipped: ${skip})` : ""}`,
    () => {
      const accountId = `acct-batch-${backend}`;
      const flowId = crypto.randomUUID();
      const bed = controlTestBed(backend);
      beforeAll(() => insertAccountWithFlow(bed.db, accountId, flowId));

      const batches = () => createBatches(bed.deps(), 1_000_000);

      /** Runs held as a worker that took them holds them, accepted in that order, each with `{"n": i}`. */
      async function held(count: number, holder = HOLDER): Promise<string[]> {
        const ids = Array.from({ length: count }, () => Bun.randomUUIDv7());
        await sql`
        insert into runs (id, account_id, flow_id, revision, status, trigger, held_by, created_at)
        select id, ${accountId}, ${flowId}, 1, 'running', jsonb_build_object('n', n), ${holder},
          now() - (${count} - n) * interval '1 millisecond'
        from unnest(${ids}::uuid[]) with ordinality as t(id, n)`.execute(bed.db);
        return ids;
      }
      const run = (id: string) => ({ id, flowId, accountId, holder: HOLDER });
      const rowsOf = async (ids: string[]) => {
        const rows = await bed.db
          .selectFrom("runs")
          .select(["id", "status", "queue_reason", "end_reason", "taken_by", "batch_size", "trigger"])
          .where("id", "in", ids)
          .execute();
        const byId = new Map(rows.map((row) => [row.id, row]));
        return ids.map((id) => byId.get(id));
      };

      test("starts of a key taken together fill a batch in order; the one that fills it closes it, and the next opens another", async () => {
        const ids = await held(5);
        const limits = batches();
        const taken = await Promise.all(ids.map((id) => limits.take(run(id), OF_THREE, "k1")));
        expect(taken).toEqual([undefined, undefined, undefined, undefined, undefined]);
        const [first, second, third, fourth, fifth] = await rowsOf(ids);
        expect(second).toMatchObject({
          status: "batched",
          end_reason: joinedBatch(ids[0] as string),
          taken_by: ids[0],
        });
        expect(third).toMatchObject({ status: "batched", taken_by: ids[0] });
        // Closed by the third: its list in acceptance order, waiting for a worker to take it.
        expect(first).toMatchObject({ status: "queued", queue_reason: null, trigger: [{ n: 1 }, { n: 2 }, { n: 3 }] });
        expect(fourth).toMatchObject({ status: "queued", queue_reason: "batch", batch_size: 2 });
        expect(fifth).toMatchObject({ status: "batched", taken_by: ids[3] });

        // Taken again, the closed batch's holder goes on with its list.
        await sql`update runs set held_by = ${HOLDER}, status = 'running' where id = ${ids[0]}`.execute(bed.db);
        expect(await limits.take(run(ids[0] as string), OF_THREE, "k1")).toEqual({
          trigger: [{ n: 1 }, { n: 2 }, { n: 3 }],
        });
      }, 60_000);

      test("a start its delivery no longer holds is left as it is", async () => {
        const [id] = (await held(1, "2-1/1")) as [string];
        expect(await batches().take(run(id), OF_THREE, "k2")).toBeUndefined();
        expect((await rowsOf([id]))[0]).toMatchObject({ status: "running", queue_reason: null, batch_size: null });
      }, 60_000);
    },
  );
}
