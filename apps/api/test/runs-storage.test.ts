import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { sql } from "kysely";
import { bearer, signUp } from "./accounts-helpers.ts";
import type { Caller } from "./context.ts";
import {
  call,
  createFlow,
  newCaller,
  planLimitsFile,
  putOnPlan,
  runUntil,
  startRun,
  type TestStep,
} from "./context.ts";
import { runModes, startTestApi, type TestApi } from "./harness.ts";

/**
 * What a run may write: each step's output once, within STEP_OUTPUT_MAX_BYTES; its trigger
 * data within TRIGGER_MAX_BYTES; its outputs and error texts together within its plan's
 * `run_record_bytes` (on the `small-runs` plan here).
 */

const OUTPUT_MAX_BYTES = 256 * 1024;
const TRIGGER_MAX_BYTES = 4 * 1024 * 1024;
const RUN_RECORD_BYTES = 100_000;

for (const { backend, redis, label, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(`what a run writes on ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;
    let owner: Caller;
    beforeAll(async () => {
      api = await startTestApi({
        backend,
        redis,
        worker: true,
        env: {
          STEP_OUTPUT_MAX_BYTES: String(OUTPUT_MAX_BYTES),
          TRIGGER_MAX_BYTES: String(TRIGGER_MAX_BYTES),
          PLAN_LIMITS_FILE: planLimitsFile({ "small-runs": { run_record_bytes: RUN_RECORD_BYTES } }),
        },
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

    /** A new account on the `small-runs` plan. */
    async function smallRuns(tag: string): Promise<Caller> {
      const caller = await newCaller(api, tag);
      await putOnPlan(api, caller, "small-runs");
      return caller;
    }

    const refusal = (used: number, bytes: number) =>
      `the run has recorded ${used.toLocaleString("en")} of the ${RUN_RECORD_BYTES.toLocaleString("en")} bytes the small-runs plan lets one run record (run_record_bytes); this output of ${bytes.toLocaleString("en")} bytes does not fit`;

    test("a for-each whose items' outputs pass run_record_bytes fails at the first that does not fit; what it recorded stays", async () => {
      const caller = await smallRuns("record-limit");
      const created = await call(api, caller, "POST", "/flows", {
        name: "copies",
        steps: [
          {
            name: "each",
            for_each: "{{trigger.items}}",
            steps: [{ name: "copy", subject: "transform", payload: { blob: "{{trigger.blob}}" } }],
          },
          { name: "after", subject: "transform", payload: {} },
        ],
      });
      expect(created.status).toBe(200);
      const flowId = created.body.data.id;
      // Each item's output is {"blob":"<10,000 x>"}: 10,011 bytes. Nine fit in 100,000; the tenth does not.
      const blob = "x".repeat(10_000);
      const itemBytes = JSON.stringify({ blob }).length;
      const started = await startRun(api, caller, flowId, { blob, items: Array.from({ length: 30 }, (_, n) => n) });
      expect(started.status).toBe(200);
      const run = await runUntil(api, caller, started.body.run_id);
      const error = refusal(9 * itemBytes, itemBytes);
      expect(run).toMatchObject({ status: "failed", error: `step "copy" failed: ${error}`, output: null });
      const copies = run.steps.filter((step: { name: string }) => step.name === "copy");
      expect(copies.map((step: { status: string }) => step.status)).toEqual([...Array(9).fill("succeeded"), "failed"]);
      expect(copies[8].output).toEqual({ blob });
      expect(copies[9]).toMatchObject({ status: "failed", error });
      expect(copies[9]).not.toHaveProperty("output");
      expect(copies[9].attempts).toHaveLength(1);
      expect(run.steps.find((step: { name: string }) => step.name === "each")).toMatchObject({
        status: "failed",
        error,
      });
      expect(run.steps.some((step: { name: string }) => step.name === "after")).toBe(false);

      // The usage shows the run that recorded the most: nine outputs, and the error text as the
      // failed item (its attempt and itself) and the for-each record it.
      const usage = await call(api, caller, "GET", "/accounts/usage");
      expect(usage.body.data.limits.find((limit: { name: string }) => limit.name === "run_record_bytes")).toEqual({
        name: "run_record_bytes",
        limit: RUN_RECORD_BYTES,
        used: 9 * itemBytes + 3 * Buffer.byteLength(error),
        unit: "bytes",
        per: "run",
        of: run.id,
      });

      // Each run has its own budget: a run of fewer items succeeds.
      const small = await startRun(api, caller, flowId, { blob, items: [1, 2, 3] });
      expect((await runUntil(api, caller, small.body.run_id)).status).toBe("succeeded");
    });

    test("a run parked between its steps counts what it recorded before: the count goes with the run, not the delivery", async () => {
      const caller = await smallRuns("record-resumed");
      const flowId = await createFlow(api, caller, [
        { name: "first", subject: "transform", payload: { blob: "{{trigger.blob}}" } },
        // Longer than a worker waits in place: the run parks and a later delivery takes it on.
        { name: "pause", subject: "delay", payload: { ms: 1500 } },
        { name: "second", subject: "transform", payload: { blob: "{{trigger.blob}}" } },
      ]);
      const blob = "y".repeat(60_000);
      const bytes = JSON.stringify({ blob }).length;
      const started = await startRun(api, caller, flowId, { blob });
      const run = await runUntil(api, caller, started.body.run_id);
      expect(run).toMatchObject({ status: "failed", error: `step "second" failed: ${refusal(bytes, bytes)}` });
      expect(run.steps.map((step: { name: string; status: string }) => [step.name, step.status])).toEqual([
        ["first", "succeeded"],
        ["pause", "succeeded"],
        ["second", "failed"],
      ]);
    });
  });
}
