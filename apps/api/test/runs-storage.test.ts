import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { sql } from "kysely";
import { bearer, signUp } from "./accounts-helpers.ts";
import type { Caller } from "./context.ts";
import { createFlow, runUntil, startRun, type TestStep } from "./context.ts";
import { runModes, startTestApi, type TestApi } from "./harness.ts";

/** What a run may write: each step's output once, within STEP_OUTPUT_MAX_BYTES; its trigger data within TRIGGER_MAX_BYTES. */

const OUTPUT_MAX_BYTES = 256 * 1024;
const TRIGGER_MAX_BYTES = 4 * 1024 * 1024;

for (const { backend, redis, label, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(`what a run writes on ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;
    let owner: Caller;
    beforeAll(async () => {
      api = await startTestApi({
        backend,
        redis,
        worker: true,
        env: { STEP_OUTPUT_MAX_BYTES: String(OUTPUT_MAX_BYTES), TRIGGER_MAX_BYTES: String(TRIGGER_MAX_BYTES) },
      });
      const { auth } = await signUp(api, "storage");
      owner = { accountId: auth.account.id, headers: bearer(auth.auth_token) };
    }, 60_000);
    afterAll(() => api.stop());

    /** Bytes of WAL the database wrote while `work` ran (the whole server's: nothing else writes here). */
    async function walWrittenBy(work: () => Promise<void>): Promise<number> {
      const lsn = async () =>
        (await sql<{ lsn: string }>`select pg_current_wal_lsn()::text as lsn`.execute(api.services.db)).rows[0]?.lsn;
      const before = await lsn();
      await work();
      const after = await lsn();
      const diff = await sql<{ bytes: string }>`
        select pg_wal_lsn_diff(${after}::pg_lsn, ${before}::pg_lsn)::text as bytes`.execute(api.services.db);
      return Number(diff.rows[0]?.bytes);
    }

    test("a large output followed by 30 steps is written once, not by every checkpoint", async () => {
      // Random text, which the database cannot compress: what it writes is what it was given.
      const blob = randomBytes(150 * 1024).toString("base64");
      const steps: TestStep[] = [
        { name: "big", subject: "transform", payload: { blob: "{{trigger.blob}}" } },
        ...Array.from({ length: 30 }, (_, n) => ({ name: `tiny${n}`, subject: "transform", payload: { n } })),
      ];
      const created = await api.request("/flows", {
        method: "POST",
        headers: owner.headers,
        json: { name: "a big output, then 30 steps", steps },
      });
      const flowId = ((await created.json()) as { data: { id: string } }).data.id;
      let run: { status: string; steps: { name: string; output: unknown }[]; output: unknown } | undefined;
      const written = await walWrittenBy(async () => {
        const started = await startRun(api, owner, flowId, { blob });
        expect(started.status).toBe(200);
        run = await runUntil(api, owner, started.body.run_id);
      });
      expect(run?.status).toBe("succeeded");
      expect(run?.steps.map((step) => step.name)).toEqual(steps.map((step) => step.name));
      expect(run?.steps[0]?.output).toEqual({ blob });
      expect(run?.output).toEqual({ n: 29 });
      // The trigger data and the output, about 200 KiB each, once each (and the small rows of 31
      // steps): every checkpoint rewriting the output would write it 31 times, over 6 MiB.
      expect(written).toBeLessThan(2 * 1024 * 1024);
    });

    test("an output over STEP_OUTPUT_MAX_BYTES fails its step, naming the limit; later steps do not run", async () => {
      const flowId = await createFlow(api, owner, [
        { name: "huge", subject: "transform", payload: { blob: "{{trigger.blob}}" } },
        { name: "after", subject: "transform", payload: {} },
      ]);
      const started = await startRun(api, owner, flowId, { blob: "x".repeat(OUTPUT_MAX_BYTES) });
      const run = await runUntil(api, owner, started.body.run_id);
      const size = JSON.stringify({ blob: "x".repeat(OUTPUT_MAX_BYTES) }).length;
      const error = `the output is ${size.toLocaleString("en")} bytes of JSON; a step may answer at most ${OUTPUT_MAX_BYTES.toLocaleString("en")} (STEP_OUTPUT_MAX_BYTES)`;
      expect(run).toMatchObject({ status: "failed", error: `step "huge" failed: ${error}`, output: null });
      expect(run.steps).toEqual([expect.objectContaining({ name: "huge", status: "failed", error })]);
      expect(run.steps[0].attempts).toHaveLength(1);
    });

    test("trigger data over TRIGGER_MAX_BYTES is 413 however the run starts, and nothing is recorded", async () => {
      const flowId = await createFlow(api, owner, [{ name: "s", subject: "transform", payload: {} }]);
      const blob = "é".repeat(TRIGGER_MAX_BYTES / 2);
      const size = Buffer.byteLength(JSON.stringify({ blob }));
      const limit = `a run may start with at most ${TRIGGER_MAX_BYTES.toLocaleString("en")} (TRIGGER_MAX_BYTES)`;
      const byHand = await startRun(api, owner, flowId, { blob });
      expect({ status: byHand.status, body: byHand.body }).toEqual({
        status: 413,
        body: { error: `the trigger data is ${size.toLocaleString("en")} bytes of JSON; ${limit}` },
      });
      // A webhook's trigger data holds its headers and its own fields besides the body.
      const flow = await api.request(`/flows/${flowId}`, { headers: owner.headers });
      const { data } = (await flow.json()) as { data: { webhook: { id: string } } };
      const webhook = await api.request(`/webhooks/${data.webhook.id}`, { method: "POST", json: { blob } });
      expect(webhook.status).toBe(413);
      expect(((await webhook.json()) as { error: string }).error).toEndWith(limit);
      const runs = await api.request(`/flows/${flowId}/runs`, { headers: owner.headers });
      expect(((await runs.json()) as { data: unknown[] }).data).toEqual([]);
    });
  });
}
