import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Server } from "bun";
import { type Caller, call, newCaller, runUntil, startRun } from "./context.ts";
import { runModes, startTestApi, type TestApi } from "./harness.ts";

/**
 * Outbound requests in flight (issue 29, finding 15): one run's nested for-each of 4 × 4
 * `http.request` steps would have all 16 in flight at once (20 × 20 held 256 from one
 * anonymous webhook). A local server counts the requests it holds at once, per test; the
 * plan bounds them per run (`free`: 3) and per account (`team`: 4, over a run bound of 10),
 * and the requests past a bound wait for a slot and all succeed.
 */
const PLANS = {
  free: { run_outbound_requests_in_flight: 3, outbound_requests_in_flight: 10 },
  team: { run_outbound_requests_in_flight: 10, outbound_requests_in_flight: 4 },
};

function planLimitsFile(): string {
  const file = join(mkdtempSync(join(tmpdir(), "plan-limits-")), "limits.json");
  writeFileSync(file, JSON.stringify(PLANS));
  return file;
}

/** Requests the upstream holds at once, and the most it held, by the path's last segment. */
interface Held {
  now: number;
  most: number;
}

for (const { label, backend, redis, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(`outbound requests in flight on ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;
    let upstream: Server<undefined>;
    const held = new Map<string, Held>();
    /** Requests of a tag wait here once `at` of them are held, until the test opens it. */
    let gate: { tag: string; at: number; reached: () => void; open: Promise<void> } | null = null;

    beforeAll(async () => {
      upstream = Bun.serve({
        port: 0,
        hostname: "127.0.0.1",
        async fetch(request) {
          const tag = new URL(request.url).pathname.split("/").at(-1) ?? "";
          const count = held.get(tag) ?? { now: 0, most: 0 };
          held.set(tag, count);
          count.now += 1;
          count.most = Math.max(count.most, count.now);
          if (gate?.tag === tag) {
            if (count.now >= gate.at) gate.reached();
            await gate.open;
          } else {
            // Held a moment, so that requests not bounded would pile up here.
            await Bun.sleep(50);
          }
          count.now -= 1;
          return Response.json({ tag });
        },
      });
      api = await startTestApi({
        backend,
        redis,
        worker: true,
        env: { HTTP_REQUEST_ALLOWED_NETWORKS: "127.0.0.1", PLAN_LIMITS_FILE: planLimitsFile() },
      });
    }, 60_000);
    afterAll(async () => {
      await api.stop();
      upstream.stop(true);
    });

    /** A new account on `plan` (set in the database, as a subscription would, before anything reads it). */
    async function account(tag: string, plan: keyof typeof PLANS): Promise<Caller> {
      const caller = await newCaller(api, tag);
      await api.services.db.updateTable("accounts").set({ plan }).where("id", "=", caller.accountId).execute();
      return caller;
    }

    /** A flow whose run sends 4 × 4 requests to the upstream, each for-each level 4 at a time. */
    async function fanOut(caller: Caller, tag: string): Promise<string> {
      const created = await call(api, caller, "POST", "/flows", {
        name: "fan out",
        steps: [
          {
            name: "outer",
            for_each: "{{trigger.items}}",
            concurrency: 4,
            steps: [
              {
                name: "inner",
                for_each: "{{trigger.items}}",
                concurrency: 4,
                steps: [
                  {
                    name: "call",
                    subject: "http.request",
                    payload: { url: `http://127.0.0.1:${upstream.port}/fan/${tag}` },
                  },
                ],
              },
            ],
          },
        ],
      });
      expect(created.status).toBe(200);
      return created.body.data.id;
    }

    const ITEMS = { items: [1, 2, 3, 4] };

    test("one run holds at most run_outbound_requests_in_flight; the others wait for a slot and all succeed", async () => {
      const owner = await account("outbound-run", "free");
      const flowId = await fanOut(owner, "per-run");
      const run = await runUntil(api, owner, (await startRun(api, owner, flowId, ITEMS)).body.run_id);
      expect(run.status).toBe("succeeded");
      expect(run.output.flat()).toHaveLength(16);
      expect(held.get("per-run")?.most).toBe(PLANS.free.run_outbound_requests_in_flight);
    });

    test("an account holds at most outbound_requests_in_flight in a process, and GET /accounts/usage shows them", async () => {
      const owner = await account("outbound-account", "team");
      const flowId = await fanOut(owner, "per-account");
      let reached = () => {};
      let open = () => {};
      const bound = PLANS.team.outbound_requests_in_flight;
      gate = {
        tag: "per-account",
        at: bound,
        reached: () => reached(),
        open: new Promise<void>((resolve) => {
          open = resolve;
        }),
      };
      const atBound = new Promise<void>((resolve) => {
        reached = resolve;
      });
      const runId = (await startRun(api, owner, flowId, ITEMS)).body.run_id;
      await atBound;

      const usage = await call(api, owner, "GET", "/accounts/usage");
      const byName: Record<string, unknown> = Object.fromEntries(
        (usage.body.data.limits as { name: string }[]).map((limit) => [limit.name, limit]),
      );
      expect(byName.outbound_requests_in_flight).toEqual({
        name: "outbound_requests_in_flight",
        limit: bound,
        used: bound,
        unit: "requests",
        per: "account",
      });
      expect(byName.run_outbound_requests_in_flight).toEqual({
        name: "run_outbound_requests_in_flight",
        limit: PLANS.team.run_outbound_requests_in_flight,
        used: bound,
        unit: "requests",
        per: "run",
        of: runId,
      });

      open();
      const run = await runUntil(api, owner, runId);
      gate = null;
      expect(run.status).toBe("succeeded");
      expect(held.get("per-account")?.most).toBe(bound);
    });
  });
}
