import { beforeAll, describe, expect, test } from "bun:test";
import { databaseBackends } from "@platform/db/testing";
import { sql } from "kysely";
import { createDebounces, REPLACED_BY_DEBOUNCE } from "./debounce.ts";
import { controlTestBed, insertAccountWithFlow } from "./test-fixtures.ts";

/**
 * The debounce, on PGlite and PostgreSQL, with runs written by hand as a worker holds them:
 * the starts a worker takes together are judged in one statement, in the order they came,
 * each seeing what the ones before it did, by the rules of engine/debounce.ts.
 */
const HOLDER = "1-1/1";
const ONE_SECOND = { periodMs: 1000, timeoutMs: null };

for (const { backend, skip } of databaseBackends()) {
  describe.skipIf(Boolean(skip))(
    `debounced starts judged together on ${backend}${skip ? ` (skipped: ${skip})` : ""}`,
    () => {
      const accountId = `acct-debounce-${backend}`;
      const flowId = crypto.randomUUID();
      const bed = controlTestBed(backend);
      beforeAll(() => insertAccountWithFlow(bed.db, accountId, flowId));

      const debounces = () => createDebounces(bed.deps());

      /** Runs held as a worker that took them holds them, accepted `agoMs` ago each, in that order. */
      async function held(agoMs: number[], holder = HOLDER): Promise<string[]> {
        const ids = agoMs.map(() => Bun.randomUUIDv7());
        await sql`
        insert into runs (id, account_id, flow_id, revision, status, trigger, held_by, created_at)
        select id, ${accountId}, ${flowId}, 1, 'running', '{}', ${holder}, now() - ago * interval '1 millisecond'
        from unnest(${ids}::uuid[], ${agoMs}::integer[]) as t(id, ago)`.execute(bed.db);
        return ids;
      }
      /** A parked run taken again by a worker (the waker's entry, or a recovery's). */
      const takeAgain = (id: string) =>
        sql`update runs set held_by = ${HOLDER}, status = 'running' where id = ${id}`.execute(bed.db);
      const rowsOf = async (ids: string[]) => {
        const rows = await bed.db
          .selectFrom("runs")
          .select([
            "id",
            "status",
            "queue_reason",
            "end_reason",
            "taken_by",
            "held_by",
            sql<boolean>`debounce_since = (select min(created_at) from runs where id = any(${ids}::uuid[]))`.as(
              "since_first",
            ),
            sql<number>`round(extract(epoch from wake_at - created_at) * 1000)`.as("wakes_after_ms"),
          ])
          .where("id", "in", ids)
          .execute();
        const byId = new Map(rows.map((row) => [row.id, row]));
        return ids.map((id) => byId.get(id));
      };

      test("of the starts of a key taken together, each replaces the one before; the last waits in the window the first began, then runs in their place", async () => {
        const ids = await held([300, 200, 100]);
        const limits = debounces();
        const taken = await Promise.all(ids.map((id) => limits.take({ id, flowId, holder: HOLDER }, ONE_SECOND, "k1")));
        expect(taken).toEqual([false, false, false]);
        const [first, second, last] = await rowsOf(ids);
        expect(first).toMatchObject({ status: "skipped", end_reason: REPLACED_BY_DEBOUNCE, taken_by: ids[1] });
        expect(second).toMatchObject({ status: "skipped", end_reason: REPLACED_BY_DEBOUNCE, taken_by: ids[2] });
        expect(last).toMatchObject({ status: "queued", queue_reason: "debounce", held_by: null, since_first: true });
        expect(Number(last?.wakes_after_ms)).toBe(1000);

        // Its second passes: woken, it goes on, and the whole chain it replaced points at it.
        await sql`update runs set created_at = created_at - interval '2 s', debounce_since = debounce_since - interval '2 s'
          where id = any(${ids}::uuid[])`.execute(bed.db);
        await takeAgain(ids[2] as string);
        expect(await limits.take({ id: ids[2] as string, flowId, holder: HOLDER }, ONE_SECOND, "k1")).toBe(true);
        expect((await rowsOf(ids)).map((row) => row?.taken_by)).toEqual([ids[2], ids[2], null]);
      }, 60_000);

      test("a due run goes on, and every run it replaced points at it; one woken early waits on", async () => {
        // Accepted 1.5 s ago and 1.2 s ago: the later one is due once it has replaced the first.
        const ids = await held([1500, 1200]);
        const limits = debounces();
        const [first, second] = ids as [string, string];
        expect(await limits.take({ id: first, flowId, holder: HOLDER }, ONE_SECOND, "k2")).toBe(false);
        expect(await limits.take({ id: second, flowId, holder: HOLDER }, ONE_SECOND, "k2")).toBe(false);
        // Taken again before its time (a period of 2 s): it waits on, its window unchanged.
        await takeAgain(second);
        const twoSeconds = { periodMs: 2000, timeoutMs: null };
        expect(await limits.take({ id: second, flowId, holder: HOLDER }, twoSeconds, "k2")).toBe(false);
        expect((await rowsOf([second]))[0]).toMatchObject({ status: "queued", queue_reason: "debounce" });
        await takeAgain(second);
        expect(await limits.take({ id: second, flowId, holder: HOLDER }, ONE_SECOND, "k2")).toBe(true);
        const [replaced, going] = await rowsOf(ids);
        expect(replaced).toMatchObject({ status: "skipped", taken_by: second });
        expect(going).toMatchObject({ status: "running", queue_reason: null, held_by: HOLDER });
        // A later delivery of a run that went through goes on again.
        expect(await limits.take({ id: second, flowId, holder: HOLDER }, ONE_SECOND, "k2")).toBe(true);
      }, 60_000);

      test("a start taken after a later one of its key is the one replaced, and the window begins with it", async () => {
        const [earlier, later] = (await held([200, 100])) as [string, string];
        const limits = debounces();
        expect(await limits.take({ id: later, flowId, holder: HOLDER }, ONE_SECOND, "k3")).toBe(false);
        expect(await limits.take({ id: earlier, flowId, holder: HOLDER }, ONE_SECOND, "k3")).toBe(false);
        const [replaced, waiting] = await rowsOf([earlier, later]);
        expect(replaced).toMatchObject({ status: "skipped", end_reason: REPLACED_BY_DEBOUNCE, taken_by: later });
        expect(waiting).toMatchObject({ status: "queued", queue_reason: "debounce" });
        const [window] = await rowsOf([later, earlier]);
        expect(window?.since_first).toBe(true);
      }, 60_000);

      test("timeout_s wakes a waiting run that long after its window began, whatever starts came after", async () => {
        const ids = await held([300, 100]);
        const limits = debounces();
        const bounded = { periodMs: 1000, timeoutMs: 500 };
        for (const id of ids) expect(await limits.take({ id, flowId, holder: HOLDER }, bounded, "k4")).toBe(false);
        // Accepted 200 ms after the window began: due 500 ms after it began, 300 ms after its acceptance (not 1 s).
        expect(Number((await rowsOf(ids))[1]?.wakes_after_ms)).toBe(300);
      }, 60_000);

      test("a start its delivery no longer holds is left as it is", async () => {
        const [id] = (await held([0], "2-1/1")) as [string];
        expect(await debounces().take({ id, flowId, holder: HOLDER }, ONE_SECOND, "k5")).toBe(false);
        expect((await rowsOf([id]))[0]).toMatchObject({ status: "running", queue_reason: null, held_by: "2-1/1" });
      }, 60_000);
    },
  );
}
