import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { DatabaseHandle } from "@platform/db";
import { openTestDatabase } from "@platform/db/testing";
import { STEP_OPTION_DEFAULTS } from "../flows/step-defaults.ts";
import { DEFAULT_LIMITS } from "../limits/plans.ts";
import { readStepRecords } from "../runs/views.ts";
import { compilePayload } from "../templates/index.ts";
import { createRunEvents } from "./events.ts";
import { type ExecutorDeps, executeRun, RunClaimedElsewhere, RunTakenOver } from "./executor.ts";
import type { LoadedStep, LoadedTask } from "./revisions.ts";
import { failStep, type StepFunction, type StepFunctions, unavailableStep } from "./step-functions.ts";
import { createRunStore, type RunStore } from "./store.ts";
import { insertAccountWithFlow } from "./test-fixtures.ts";

/**
 * The executor on a real database, with step functions written for the test (a flaky one,
 * one that never answers, one that counts its calls): retries, backoff, time limits,
 * parking and resuming after a crash, without a network or a sandbox.
 */
describe("the run executor", () => {
  let database: DatabaseHandle;
  let store: RunStore;
  const accountId = "acct-executor";
  const flowId = crypto.randomUUID();

  beforeAll(async () => {
    database = await openTestDatabase("pglite");
    store = createRunStore(database, 30_000);
    await insertAccountWithFlow(database.db, accountId, flowId);
  }, 60_000);
  afterAll(() => database?.close());

  async function queuedRun(trigger: unknown = {}): Promise<string> {
    const id = Bun.randomUUIDv7();
    await database.db
      .insertInto("runs")
      .values({
        id,
        account_id: accountId,
        flow_id: flowId,
        revision: 1,
        status: "queued",
        trigger: JSON.stringify(trigger),
      })
      .execute();
    return id;
  }

  /** The run's row, with its step records as `GET /runs/{id}` reads them. */
  const readRun = async (id: string) => ({
    ...(await database.db.selectFrom("runs").selectAll().where("id", "=", id).executeTakeFirstOrThrow()),
    steps: await readStepRecords(database.db, id),
  });

  function functions(overrides: Partial<StepFunctions>): StepFunctions {
    const unused = unavailableStep("transform");
    return {
      transform: async (payload) => payload,
      respond: unused,
      "kv.get": unused,
      "kv.put": unused,
      "stream.publish": unused,
      "http.request": unused,
      js: unused,
      "event.send": unused,
      "mcp.call": unused,
      ...overrides,
    };
  }

  const step = (
    name: string,
    subject: LoadedTask["subject"],
    options: Partial<LoadedTask["options"]> = {},
  ): LoadedTask => ({
    kind: "task",
    name,
    subject,
    payload: compilePayload({ from: "{{trigger.n}}" }),
    options: { ...STEP_OPTION_DEFAULTS, ...options },
    secretKeys: [],
  });

  /** Every account on the default limits. */
  const defaultPlan = { of: async () => ({ plan: "free", limits: DEFAULT_LIMITS }) };

  /** A flow of these steps, run by the executor. */
  const execute = (
    deps: Pick<ExecutorDeps, "store" | "functions" | "secrets" | "outputMaxBytes">,
    run: Parameters<typeof executeRun>[1],
    steps: LoadedStep[],
    signal: AbortSignal,
    onClaimed?: (claimedAt: number) => void,
  ) =>
    executeRun(
      {
        ...deps,
        forEachMaxItems: 100,
        events: createRunEvents(database.db, defaultPlan),
        limits: defaultPlan,
        startChild: () => Promise.reject(new Error("no flow.call here")),
        childOutcome: async () => null,
        maxCallDepth: 10,
      },
      run,
      { steps, onFailure: [] },
      signal,
      onClaimed,
    );

  const noSecrets = async () => ({});
  const OUTPUT_MAX_BYTES = 64 * 1024;
  const live = () => new AbortController().signal;
  /** What `execute` is given: the store, the step functions with `overrides`, no secrets. */
  const depsWith = (overrides: Partial<StepFunctions> = {}) => ({
    store,
    functions: functions(overrides),
    secrets: noSecrets,
    outputMaxBytes: OUTPUT_MAX_BYTES,
  });

  test("a step failing twice is tried again after a growing, jittered backoff, and succeeds", async () => {
    let calls = 0;
    const flaky: StepFunction = async (payload) => {
      calls++;
      if (calls < 3) throw new Error(`upstream said 503 (${calls})`);
      return { ok: payload };
    };
    const runId = await queuedRun({ n: 5 });
    const run = await store.claim(runId, "e1", 1);
    if (!run) throw new Error("not claimed");
    const steps = [step("call", "http.request", { attempts: 3, backoff_ms: 40 })];
    const end = await execute(depsWith({ "http.request": flaky }), run, steps, live());
    expect(end).toMatchObject({ kind: "finished", status: "succeeded", output: { ok: { from: 5 } } });

    const row = await readRun(runId);
    expect(row.status).toBe("succeeded");
    const record = row.steps.call;
    expect(record?.attempts.map((a) => a.error)).toEqual(["upstream said 503 (1)", "upstream said 503 (2)", undefined]);
    const times = record?.attempts.map((a) => [Date.parse(a.started_at), Date.parse(a.finished_at ?? "")]) ?? [];
    // Backoff before attempt 2 is 20-40 ms, before attempt 3 40-80 ms (half to all of 40 and 80).
    expect((times[1]?.[0] ?? 0) - (times[0]?.[1] ?? 0)).toBeGreaterThanOrEqual(20);
    expect((times[2]?.[0] ?? 0) - (times[1]?.[1] ?? 0)).toBeGreaterThanOrEqual(40);
  });

  test("an output JSON cannot write (it holds itself) fails its step at once, not the run's delivery", async () => {
    const cyclic: StepFunction = async () => {
      const output: Record<string, unknown> = {};
      output.self = output;
      return output;
    };
    const runId = await queuedRun();
    const run = await store.claim(runId, "e-cyclic", 1);
    if (!run) throw new Error("not claimed");
    const end = await execute(
      depsWith({ "http.request": cyclic }),
      run,
      [step("loop", "http.request", { attempts: 3, backoff_ms: 1 })],
      live(),
    );
    expect(end).toMatchObject({ kind: "finished", status: "failed" });
    const row = await readRun(runId);
    expect(row.error).toStartWith('step "loop" failed: the output is not storable: ');
    expect(row.steps.loop?.attempts).toHaveLength(1);
  });

  test("an attempt that outlives options.timeout is stopped, its function's signal aborted; the run fails after the last", async () => {
    const signals: AbortSignal[] = [];
    const hangs: StepFunction = (_payload, context) => {
      signals.push(context.signal);
      return new Promise(() => {});
    };
    const runId = await queuedRun();
    const run = await store.claim(runId, "e2", 1);
    if (!run) throw new Error("not claimed");
    const steps = [
      step("slow", "http.request", { timeout: 50, attempts: 2, backoff_ms: 1 }),
      step("never", "transform"),
    ];
    const end = await execute(depsWith({ "http.request": hangs }), run, steps, live());
    expect(end).toMatchObject({
      kind: "finished",
      status: "failed",
      error: 'step "slow" failed: timed out after 50 ms',
    });
    expect(signals.map((signal) => signal.aborted)).toEqual([true, true]);
    const row = await readRun(runId);
    expect(row).toMatchObject({ status: "failed", error: 'step "slow" failed: timed out after 50 ms', held_by: null });
    expect(row.steps.slow?.attempts.map((a) => a.error)).toEqual(["timed out after 50 ms", "timed out after 50 ms"]);
    expect(row.steps.never).toBeUndefined();
  });

  test("a failure marked not retryable ends the step at once, whatever its attempts", async () => {
    let calls = 0;
    const refuses: StepFunction = async () => {
      calls++;
      return failStep("the address 127.0.0.1 is refused");
    };
    const runId = await queuedRun();
    const run = await store.claim(runId, "e3", 1);
    if (!run) throw new Error("not claimed");
    const end = await execute(
      depsWith({ "http.request": refuses }),
      run,
      [step("call", "http.request", { attempts: 5 })],
      live(),
    );
    expect(end).toMatchObject({ status: "failed", error: 'step "call" failed: the address 127.0.0.1 is refused' });
    expect(calls).toBe(1);
  });

  test("a long backoff parks the run without holding it; an early delivery parks it again without an attempt", async () => {
    let calls = 0;
    const fails: StepFunction = async () => {
      calls++;
      throw new Error("not yet");
    };
    const deps = depsWith({ "http.request": fails });
    const runId = await queuedRun();
    const steps = [step("call", "http.request", { attempts: 3, backoff_ms: 60_000 })];
    const first = await store.claim(runId, "e4", 1);
    if (!first) throw new Error("not claimed");
    const end = await execute(deps, first, steps, live());
    expect(end.kind).toBe("parked");
    const parked = await readRun(runId);
    expect(parked).toMatchObject({ status: "running", held_by: null });
    expect(parked.wake_at?.getTime()).toBeGreaterThan(Date.now() + 25_000);
    expect(parked.steps.call).toMatchObject({ status: "retrying", until: expect.any(String) });

    // Another entry for the run (a wake-up that came early): it takes the run and parks it again.
    const early = await store.claim(runId, "e5", 1);
    if (!early) throw new Error("not claimed");
    expect((await execute(deps, early, steps, live())).kind).toBe("parked");
    expect(calls).toBe(1);
    expect((await readRun(runId)).wake_at?.getTime()).toBe(parked.wake_at?.getTime());
  });

  test("a run is held by one entry: another entry's delivery gets nothing, a later delivery of the same entry takes over", async () => {
    const runId = await queuedRun();
    const held = await store.claim(runId, "e6", 1);
    expect(held?.holder).toBe("e6/1");
    expect(await store.claim(runId, "e7", 1)).toBeNull();
    const again = await store.claim(runId, "e6", 2);
    expect(again?.holder).toBe("e6/2");
    // The first delivery's worker comes back: its writes are refused and it stops.
    const stale = depsWith();
    if (!held) throw new Error("not claimed");
    await expect(execute(stale, held, [step("t", "transform")], live())).rejects.toBeInstanceOf(RunTakenOver);
  });

  const fresh = (runId: string, entryId: string, trigger: unknown = {}) =>
    store.fresh(
      { id: runId, accountId, flowId, revision: 1, trigger, waiter: null, parentRunId: null, callDepth: 0 },
      entryId,
    );

  test("a run gives the event loop back once its steps held it for a slice, however little they await", async () => {
    // Steps of 0.2 ms that never wait, written nowhere: without turns nothing else would run before the last.
    let stepsDone = 0;
    const busy: StepFunction = async (payload) => {
      const until = performance.now() + 0.2;
      while (performance.now() < until) {}
      stepsDone++;
      return payload;
    };
    const keeping: RunStore = { ...store, write: async () => true };
    const loopTurned = { afterSteps: -1 };
    setImmediate(() => {
      loopTurned.afterSteps = stepsDone;
    });
    const items: LoadedStep = {
      kind: "for_each",
      name: "each",
      items: compilePayload("{{trigger.items}}"),
      steps: [step("work", "transform")],
      concurrency: 1,
      secretKeys: [],
    };
    const trigger = { items: Array.from({ length: 60 }, (_, index) => index) };
    const run = fresh(crypto.randomUUID(), "e-turns", trigger);
    const end = await execute({ ...depsWith({ transform: busy }), store: keeping }, run, [items], live());
    expect(end).toMatchObject({ kind: "finished", status: "succeeded" });
    expect(stepsDone).toBe(60);
    // The 32nd step (item 30, after the for-each's own and 30 items, 6 ms in) waited for the loop's turn.
    expect(loopTurned.afterSteps).toBe(30);
  });

  test("a run taken from its queueing entry, without reading its row, is claimed by its first write and runs to its end", async () => {
    const runId = await queuedRun({ n: 7 });
    const deps = depsWith();
    const end = await execute(deps, fresh(runId, "e20", { n: 7 }), [step("shape", "transform")], live());
    expect(end).toMatchObject({ kind: "finished", status: "succeeded", output: { from: 7 } });
    const row = await readRun(runId);
    expect(row).toMatchObject({ status: "succeeded", held_by: null, steps: { shape: { output: { from: 7 } } } });
    expect(row.started_at?.getTime()).toBeGreaterThanOrEqual(row.created_at.getTime());
    expect(row.started_at?.getTime()).toBeLessThanOrEqual(row.finished_at?.getTime() ?? 0);
  });

  test("a step with outside effects in a run taken from its entry starts only once the run is claimed, under a lease", async () => {
    const runId = await queuedRun({ n: 1 });
    let seen: { held_by: string | null; status: string; lease_until: Date | null } | undefined;
    const claims: number[] = [];
    const effect: StepFunction = async (payload) => {
      seen = await readRun(runId);
      return payload;
    };
    const deps = depsWith({ "kv.put": effect });
    const before = Date.now();
    await execute(deps, fresh(runId, "e21"), [step("put", "kv.put")], live(), (at) => claims.push(at));
    expect(seen).toMatchObject({ held_by: "e21/1", status: "running" });
    expect(seen?.lease_until?.getTime()).toBeGreaterThan(Date.now() + 20_000);
    // The lease is held from the claim on; the claim's time is taken before its write was sent.
    expect(claims).toHaveLength(1);
    expect(claims[0]).toBeGreaterThanOrEqual(before);
  });

  test("a run another delivery claimed first is not written by one taken from its entry", async () => {
    const runId = await queuedRun();
    expect((await store.claim(runId, "e22", 1))?.holder).toBe("e22/1");
    const deps = depsWith();
    await expect(execute(deps, fresh(runId, "e23"), [step("shape", "transform")], live())).rejects.toBeInstanceOf(
      RunClaimedElsewhere,
    );
    expect(await readRun(runId)).toMatchObject({ status: "running", held_by: "e22/1", steps: {} });
  });

  test("after a crash the run resumes after its last checkpoint: finished steps do not run again", async () => {
    const calls: string[] = [];
    let crash = true;
    const worker = new AbortController();
    const effect: StepFunction = async (payload, context) => {
      calls.push(context.stepName);
      if (context.stepName === "second" && crash) {
        // The worker dies during this attempt.
        worker.abort(new Error("the worker is shutting down"));
        return new Promise(() => {});
      }
      return payload;
    };
    const deps = depsWith({ "kv.put": effect });
    const steps = [step("first", "kv.put"), step("second", "kv.put"), step("third", "kv.put")];
    const runId = await queuedRun({ n: 1 });
    const first = await store.claim(runId, "e8", 1);
    if (!first) throw new Error("not claimed");
    await expect(execute(deps, first, steps, worker.signal)).rejects.toThrow("the worker is shutting down");
    const crashed = await readRun(runId);
    expect(crashed.steps.first?.status).toBe("succeeded");
    // The attempt of `second` was recorded before it started, and never finished.
    expect(crashed.steps.second?.attempts).toEqual([{ started_at: expect.any(String) }]);

    crash = false;
    const resumed = await store.claim(runId, "e8", 2);
    if (!resumed) throw new Error("not claimed");
    expect(await execute(deps, resumed, steps, live())).toMatchObject({ status: "succeeded" });
    expect(calls).toEqual(["first", "second", "second", "third"]);
    const row = await readRun(runId);
    expect(row.steps.second?.attempts.map((a) => a.error)).toEqual([
      "interrupted: the worker stopped during this attempt",
      undefined,
    ]);
    expect(row.steps.first?.attempts).toHaveLength(1);
  });
});
