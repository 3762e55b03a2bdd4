import { describe, expect, test } from "bun:test";
import { firstIdAt } from "@platform/db";
import { databaseBackends } from "@platform/db/testing";
import { sql } from "kysely";
import { housekeep } from "../housekeeping/housekeeping.ts";
import { createRateLimits } from "./rate-limit.ts";
import { controlTestBed, insertAccountWithFlow } from "./test-fixtures.ts";

/**
 * Rate limits judged against a key's tally, on PGlite and PostgreSQL, with runs written by
 * hand so that their acceptance times (their ids') are chosen: starts accepted over many
 * periods and taken in no order are judged exactly as counting every taken start of the
 * window one by one judges them, across a change of period and a tally housekeeping removed.
 */
const HOLDER = "1-1/1";

/** A UUIDv7 of the millisecond `ms`, unique. */
function idAt(ms: number): string {
  const rest = crypto.randomUUID().replaceAll("-", "");
  const first = firstIdAt(ms);
  return `${first.slice(0, 14)}7${rest.slice(0, 3)}-8${rest.slice(4, 7)}-${rest.slice(8, 20)}`;
}

/** A shuffled copy (a seeded generator, so a failure can be run again). */
function shuffled<T>(items: T[], seed: number): T[] {
  const copy = [...items];
  let state = seed;
  const next = () => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state / 2_147_483_648;
  };
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [copy[i], copy[j]] = [copy[j] as T, copy[i] as T];
  }
  return copy;
}

/** The rule itself: a start is taken when fewer than `limit` taken starts were accepted less than a period from it. */
function oracle() {
  const taken: number[] = [];
  return (at: number, limit: number, periodMs: number) => {
    const near = taken.filter((other) => Math.abs(other - at) < periodMs).length;
    if (near >= limit) return false;
    taken.push(at);
    return true;
  };
}

for (const { backend, skip } of databaseBackends()) {
  describe.skipIf(Boolean(skip))(
    `rate limits counted by tallies on ${backend}${skip ? ` (skipped: ${skip})` : ""}`,
    () => {
      const accountId = `acct-rate-${backend}`;
      const bed = controlTestBed(backend);

      const deps = () => bed.deps();

      /** Runs accepted at `times` (ms), held as a worker that took them holds them. */
      async function acceptedAt(flowId: string, times: number[]): Promise<string[]> {
        const ids = times.map(idAt);
        const rows = ids.map((id) => ({ id, account_id: accountId, flow_id: flowId, revision: 1 }));
        await sql`
        insert into runs (id, account_id, flow_id, revision, status, trigger, held_by)
        select id, account_id, flow_id, revision, 'running', '{}', ${HOLDER}
        from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as r(id uuid, account_id text, flow_id uuid, revision int)`.execute(
          bed.db,
        );
        return ids;
      }

      /**
       * Judges the starts in the order given, beside the oracle; answers both judgements.
       * `together`: all taken at once, as a worker takes the starts it read (judged in batches).
       */
      async function judge(
        flowId: string,
        starts: { id: string; at: number }[],
        rate: { limit: number; periodMs: number },
        rule: ReturnType<typeof oracle>,
        together = false,
      ) {
        const limits = createRateLimits(deps());
        const take = (start: { id: string }) =>
          limits.take({ id: start.id, flowId, holder: HOLDER }, { ...rate, key: null }, "");
        const judged: boolean[] = [];
        if (together) judged.push(...(await Promise.all(starts.map(take))));
        else for (const start of starts) judged.push(await take(start));
        const expected = starts.map((start) => rule(start.at, rate.limit, rate.periodMs));
        return { judged, expected };
      }

      test("starts taken out of order over many periods are judged as counting one by one judges them", async () => {
        const flowId = crypto.randomUUID();
        await insertAccountWithFlow(bed.db, `${accountId}-order`, flowId);
        // 400 starts over 16 periods of a second, more than `limit` of them in most windows.
        const base = Date.now() - 60_000;
        const times = Array.from({ length: 400 }, (_, i) => base + Math.floor((i * 16_000) / 400) + (i % 7));
        const ids = await acceptedAt(flowId, times);
        const starts = shuffled(
          ids.map((id, i) => ({ id, at: times[i] as number })),
          7,
        );
        const { judged, expected } = await judge(flowId, starts, { limit: 5, periodMs: 1000 }, oracle());
        expect(judged).toEqual(expected);
        expect(judged.filter(Boolean).length).toBeGreaterThan(40);
        expect(judged.filter((taken) => !taken).length).toBeGreaterThan(100);
        // Skipped starts say why; taken ones keep the key, which a later delivery is taken again by.
        const statuses = await bed.db
          .selectFrom("runs")
          .select(["status", "end_reason", "rate_key"])
          .where("flow_id", "=", flowId)
          .execute();
        expect(statuses.filter((run) => run.status === "skipped").length).toBe(
          expected.filter((taken) => !taken).length,
        );
        expect(new Set(statuses.map((run) => run.end_reason ?? `taken ${run.rate_key}`))).toEqual(
          new Set(["rate limited: 5 starts per 1 s", "taken "]),
        );
        const again = starts[expected.indexOf(true)];
        if (!again) throw new Error("nothing was taken");
        expect(await judge(flowId, [again], { limit: 5, periodMs: 1000 }, () => true)).toEqual({
          judged: [true],
          expected: [true],
        });
        // The key's tally keeps the buckets of the last few periods, not one per start.
        const { count } = await bed.db
          .selectFrom("rate_limit_tally_buckets")
          .innerJoin("rate_limit_tallies", "rate_limit_tallies.id", "rate_limit_tally_buckets.tally_id")
          .select((eb) => eb.fn.countAll<string>().as("count"))
          .where("rate_limit_tallies.flow_id", "=", flowId)
          .executeTakeFirstOrThrow();
        expect(Number(count)).toBeLessThan(600);
      }, 120_000);

      test("starts a worker takes together are judged in the order they came, in batches", async () => {
        const flowId = crypto.randomUUID();
        await insertAccountWithFlow(bed.db, `${accountId}-together`, flowId);
        const base = Date.now() - 60_000;
        const times = Array.from({ length: 300 }, (_, i) => base + Math.floor((i * 6000) / 300));
        const ids = await acceptedAt(flowId, times);
        const starts = shuffled(
          ids.map((id, i) => ({ id, at: times[i] as number })),
          11,
        );
        const { judged, expected } = await judge(flowId, starts, { limit: 8, periodMs: 1000 }, oracle(), true);
        expect(judged).toEqual(expected);
        expect(judged.filter(Boolean).length).toBeGreaterThan(20);
        expect(judged.filter((taken) => !taken).length).toBeGreaterThan(100);
      }, 120_000);

      test("a new period, and a tally housekeeping removed, still count the starts taken before", async () => {
        const flowId = crypto.randomUUID();
        await insertAccountWithFlow(bed.db, `${accountId}-period`, flowId);
        const base = Date.now() - 60_000;
        const rule = oracle();
        const batch = async (from: number, span: number, count: number, seed: number) => {
          const times = Array.from({ length: count }, (_, i) => from + Math.floor((i * span) / count));
          const ids = await acceptedAt(flowId, times);
          return shuffled(
            ids.map((id, i) => ({ id, at: times[i] as number })),
            seed,
          );
        };
        const first = await judge(flowId, await batch(base, 4000, 120, 1), { limit: 4, periodMs: 1000 }, rule);
        expect(first.judged).toEqual(first.expected);
        // Four times the period: the tally is made again, and the starts taken under the old one still count.
        const second = await judge(flowId, await batch(base + 3000, 8000, 160, 2), { limit: 6, periodMs: 4000 }, rule);
        expect(second.judged).toEqual(second.expected);
        expect(second.judged.filter(Boolean).length).toBeGreaterThan(0);
        // Housekeeping a day later removes the key's tally; its starts are judged without it, the same.
        const report = await housekeep({
          db: bed.db,
          broker: bed.broker,
          groups: [],
          now: () => new Date(Date.now() + 86_400_000),
        });
        expect(report.removed.rate_limit_tallies).toBeGreaterThanOrEqual(1);
        const third = await judge(flowId, await batch(base + 2000, 12_000, 120, 3), { limit: 6, periodMs: 4000 }, rule);
        expect(third.judged).toEqual(third.expected);
        expect(third.judged.filter((taken) => !taken).length).toBeGreaterThan(0);
      }, 120_000);
    },
  );
}
