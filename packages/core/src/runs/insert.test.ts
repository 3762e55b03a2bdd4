import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import type { DatabaseHandle } from "@platform/db";
import { databaseBackends, openTestDatabase } from "@platform/db/testing";
import { sql } from "kysely";
import { createBroker } from "../broker/index.ts";
import { type Broker, laneTurnOf, PLATFORM_SCOPE } from "../broker/port.ts";
import { runWakerJob } from "../engine/housekeeping.ts";
import { createRunQueue, RUN_STREAM, type RunQueue } from "../engine/run-queue.ts";
import { createRunStore } from "../engine/store.ts";
import { insertAccountWithFlow, insertFlow } from "../engine/test-fixtures.ts";
import { isDomainError } from "../errors.ts";
import { createLogger } from "../logger.ts";
import { createMetricsRecorder, type MetricsRecorder } from "../monitoring/recorder.ts";
import {
  createRunInserter,
  type NewRun,
  newRunId,
  type RunInserter,
  recordFilteredRun,
  runRow,
  startRunsInTransaction,
} from "./insert.ts";

/**
 * The protocol every run is created by (runs/insert.ts), on PGlite and PostgreSQL: a run is
 * queued only once its row has committed; a committed run is queued, or withdrawn when its
 * caller can be told, or else left to the waker; a delivery id starts one run. The run queue
 * stands on a broker of its own (PostgreSQL's adapter on another PGlite), as Redis would: the
 * broker "down" is one whose database has gone.
 */
const logger = createLogger({ level: "silent", name: "run-insert-test" });

/** Every run entry on the queue's stream, each account's lane admitted whole first (as its turns would). */
async function queuedEntries(broker: Broker): Promise<{ run: string; start?: Record<string, unknown> }[]> {
  for (const entry of await broker.readRange(PLATFORM_SCOPE, RUN_STREAM, { limit: 1000 })) {
    const turn = laneTurnOf(entry.payload);
    if (turn) await broker.admitLane(PLATFORM_SCOPE, RUN_STREAM, turn, 1000);
  }
  return (await broker.readRange(PLATFORM_SCOPE, RUN_STREAM, { limit: 1000 })).flatMap((entry) =>
    laneTurnOf(entry.payload) ? [] : [JSON.parse(entry.payload)],
  );
}

for (const { backend, skip } of databaseBackends()) {
  describe.skipIf(skip !== false)(`creating runs on ${backend}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let database: DatabaseHandle;
    let queueDatabase: DatabaseHandle;
    let goneDatabase: DatabaseHandle;
    let broker: Broker;
    let brokerDown: Broker;
    let runQueue: RunQueue;
    let metrics: MetricsRecorder;
    let inserter: RunInserter;
    const accountId = "acct-insert";
    const flowId = crypto.randomUUID();
    const deletedFlowId = crypto.randomUUID();

    beforeAll(async () => {
      database = await openTestDatabase(backend);
      queueDatabase = await openTestDatabase("pglite");
      goneDatabase = await openTestDatabase("pglite");
      broker = await createBroker({ database: queueDatabase });
      brokerDown = await createBroker({ database: goneDatabase });
      await goneDatabase.close();
      runQueue = createRunQueue(broker, 1);
      metrics = createMetricsRecorder({ broker, logger });
      inserter = createRunInserter({ database, runQueue, metrics, logger });
      await insertAccountWithFlow(database.db, accountId, flowId);
      await insertFlow(database.db, accountId, deletedFlowId, { name: "gone", deleted_at: new Date() });
    }, 60_000);
    afterAll(async () => {
      await metrics?.close();
      await brokerDown?.close().catch(() => undefined);
      await broker?.close();
      await queueDatabase?.close();
      await database?.close();
    });

    const newRun = (extra: Partial<NewRun> = {}): NewRun => ({
      id: newRunId(),
      accountId,
      flowId,
      trigger: JSON.stringify({ order: 7 }),
      ...extra,
    });
    const rowOf = (id: string) =>
      database.db
        .selectFrom("runs")
        .select(["status", "queue_reason", "wake_at", "finished_at", "revision", "replay_of", "delivery_id"])
        .where("id", "=", id)
        .executeTakeFirst();
    const queuedIds = async () => (await queuedEntries(broker)).map((entry) => entry.run);
    const claimOf = async (deliveryId: string) =>
      (
        await database.db
          .selectFrom("run_deliveries")
          .select("run_id")
          .where("flow_id", "=", flowId)
          .where("delivery_id", "=", deliveryId)
          .executeTakeFirst()
      )?.run_id;

    test("a start someone waits for is recorded queued, then queued with the run as accepted; its delivery id starts it once", async () => {
      const before = await metrics.read(accountId, "runs.started");
      const run = newRun({ deliveryId: `evt_${crypto.randomUUID()}` });
      expect(await inserter.insert(runRow(run))).toEqual({ runId: run.id, duplicate: false, revision: 1 });
      expect(await rowOf(run.id)).toMatchObject({ status: "queued", queue_reason: null, wake_at: null, revision: 1 });
      const entry = (await queuedEntries(broker)).find((queued) => queued.run === run.id);
      expect(entry?.start).toEqual({
        account: accountId,
        flow: flowId,
        revision: 1,
        waiter: null,
        trigger: { order: 7 },
      });

      // The sender delivers the same event again: the run it started is the answer, nothing new is queued.
      const again = newRun({ deliveryId: run.deliveryId });
      expect(await inserter.insert(runRow(again))).toEqual({ runId: run.id, duplicate: true });
      expect(await rowOf(again.id)).toBeUndefined();
      expect((await queuedIds()).filter((id) => id === run.id || id === again.id)).toEqual([run.id]);
      expect(await metrics.read(accountId, "runs.started")).toBe(before + 1);
    });

    test("a run executed in place is recorded as it ended, with its step records, in its INSERT; another revision's is queued", async () => {
      const record = (status: string) =>
        JSON.stringify({
          status,
          error: status === "failed" ? 'step "shape" failed: boom' : null,
          wake_at: null,
          waiting_on: null,
          finished: true,
          recorded_bytes: 12,
          took_ms: 3,
          steps: [
            {
              name: "shape",
              record: { status, attempts: [{ started_at: "2026-11-27T00:00:00.000Z" }] },
              output: status === "succeeded" ? { order: 7 } : null,
            },
          ],
        });
      const ran = newRun({ ranInPlace: { revision: 1, end: null, record: record("succeeded") } });
      const failed = newRun({ ranInPlace: { revision: 1, end: null, record: record("failed") } });
      const [answered, answeredFailed] = await Promise.all([
        inserter.insert(runRow(ran)),
        inserter.insert(runRow(failed)),
      ]);
      expect(answered).toMatchObject({ runId: ran.id, duplicate: false, revision: 1, inPlace: { revision: 1 } });
      expect(answeredFailed.inPlace).toBeDefined();
      const row = await database.db
        .selectFrom("runs")
        .select(["status", "error", "wake_at", "held_by", "created_at", "started_at", "finished_at", "recorded_bytes"])
        .where("id", "=", ran.id)
        .executeTakeFirstOrThrow();
      expect(row).toMatchObject({ status: "succeeded", error: null, wake_at: null, held_by: null });
      expect(Number(row.recorded_bytes)).toBe(12);
      // Accepted when its execution began, by the database's clock: it took 3 ms before the INSERT.
      expect(new Date(row.finished_at as Date).getTime() - new Date(row.created_at).getTime()).toBe(3);
      expect(row.started_at).toEqual(row.created_at);
      const steps = await database.db
        .selectFrom("run_steps")
        .select(["name", "record", "output"])
        .where("run_id", "in", [ran.id, failed.id])
        .orderBy("output")
        .execute();
      expect(steps.map((step) => [step.name, (step.record as { status: string }).status, step.output])).toEqual([
        ["shape", "succeeded", { order: 7 }],
        ["shape", "failed", null],
      ]);
      expect(await rowOf(failed.id)).toMatchObject({ status: "failed" });
      expect(
        (await database.db.selectFrom("runs").select("error").where("id", "=", failed.id).executeTakeFirstOrThrow())
          .error,
      ).toBe('step "shape" failed: boom');
      expect(await queuedIds()).not.toContain(ran.id);

      // Executed under a revision the flow no longer has as its current one: recorded queued, and queued.
      const stale = newRun({ ranInPlace: { revision: 2, end: null, record: record("succeeded") } });
      const queued = await inserter.insert(runRow(stale));
      expect(queued).toEqual({ runId: stale.id, duplicate: false, revision: 1 });
      expect(await rowOf(stale.id)).toMatchObject({ status: "queued", finished_at: null });
      const staleSteps = await database.db
        .selectFrom("run_steps")
        .select("name")
        .where("run_id", "=", stale.id)
        .execute();
      expect(staleSteps).toEqual([]);
      expect(await queuedIds()).toContain(stale.id);
    });

    test("a start whose append fails is withdrawn with its delivery claim, so the sender's retry starts it", async () => {
      const down = createRunInserter({ database, runQueue: createRunQueue(brokerDown, 1), metrics, logger });
      const run = newRun({ deliveryId: `evt_${crypto.randomUUID()}` });
      const failed = await down.insert(runRow(run)).catch((error: unknown) => error);
      expect(failed).toBeInstanceOf(Error);
      expect(await rowOf(run.id)).toBeUndefined();
      expect(await claimOf(run.deliveryId as string)).toBeUndefined();
      expect(await queuedIds()).not.toContain(run.id);

      const retry = newRun({ deliveryId: run.deliveryId });
      expect(await inserter.insert(runRow(retry))).toEqual({ runId: retry.id, duplicate: false, revision: 1 });
      expect(await queuedIds()).toContain(retry.id);
    });

    /**
     * A start whose process stops between its commit and its append: its row and delivery claim
     * are committed, and nothing queues it (the queue it would append to never answers).
     */
    async function startThatStops(run: NewRun): Promise<void> {
      const { promise: reached, resolve } = Promise.withResolvers<void>();
      const stops: RunQueue = {
        ...runQueue,
        append: () => {
          resolve();
          return new Promise<void>(() => {});
        },
      };
      void createRunInserter({ database, runQueue: stops, metrics, logger }).insert(runRow(run));
      await reached;
    }
    const acceptedAMinuteAgo = (id: string) =>
      sql`update runs set created_at = created_at - interval '1 minute' where id = ${id}`.execute(database.db);
    const entriesOf = async (id: string) => (await queuedEntries(broker)).filter((entry) => entry.run === id);

    test("entries carry the run as accepted; its trigger data only when the queue's entries carry it and it is small", async () => {
      const withoutTriggers = createRunInserter({
        database,
        runQueue: createRunQueue(broker, 1, false),
        metrics,
        logger,
      });
      const small = newRun({ trigger: JSON.stringify({ order: 7 }) });
      const large = newRun({ trigger: JSON.stringify("x".repeat(9000)) });
      const uncarried = newRun({ trigger: JSON.stringify({ order: 8 }) });
      await inserter.insert(runRow(small));
      await inserter.insert(runRow(large));
      await withoutTriggers.insert(runRow(uncarried));
      expect((await entriesOf(small.id))[0]?.start).toMatchObject({ flow: flowId, trigger: { order: 7 } });
      // The worker reads these two's trigger data from their rows.
      for (const id of [large.id, uncarried.id]) {
        const [entry] = await entriesOf(id);
        expect(entry?.start).toMatchObject({ account: accountId, flow: flowId, revision: 1 });
        expect(entry?.start).not.toHaveProperty("trigger");
      }
    });

    test("a run whose start stopped before queueing it is queued by the sender's retry, once; one a worker took, or the waker has, is not", async () => {
      const run = newRun({ deliveryId: `evt_${crypto.randomUUID()}` });
      await startThatStops(run);
      await acceptedAMinuteAgo(run.id);
      expect(await rowOf(run.id)).toMatchObject({ status: "queued", wake_at: null });
      expect(await entriesOf(run.id)).toEqual([]);

      const retry = newRun({ deliveryId: run.deliveryId });
      expect(await inserter.insert(runRow(retry))).toEqual({ runId: run.id, duplicate: true });
      // Queued by its id (the worker reads the row), and the waker's from now on.
      expect(await entriesOf(run.id)).toEqual([{ run: run.id }]);
      expect(((await rowOf(run.id))?.wake_at?.getTime() ?? 0) - Date.now()).toBeGreaterThan(60_000);

      // Retried again: the run has its entry, and the waker behind it; nothing more is queued.
      const again = newRun({ deliveryId: run.deliveryId });
      expect(await inserter.insert(runRow(again))).toEqual({ runId: run.id, duplicate: true });
      expect(await entriesOf(run.id)).toEqual([{ run: run.id }]);
      expect(await rowOf(retry.id)).toBeUndefined();

      // A run a worker has taken, and one the waker has, are not queued again.
      const taken = newRun({ deliveryId: `evt_${crypto.randomUUID()}` });
      await startThatStops(taken);
      await acceptedAMinuteAgo(taken.id);
      expect(await createRunStore(database, 30_000).claim(taken.id, "1-0", 1)).not.toBeNull();
      const woken = newRun({ deliveryId: `schedule:${new Date().toISOString()}` });
      await startRunsInTransaction(
        { db: database.db, runQueue: createRunQueue(brokerDown, 1), metrics },
        "schedule",
        (_trx, insert) => insert([woken]),
      ).catch(() => undefined);
      await acceptedAMinuteAgo(woken.id);
      const wakeAt = (await rowOf(woken.id))?.wake_at;

      for (const other of [taken, woken]) {
        expect(await inserter.insert(runRow(newRun({ deliveryId: other.deliveryId })))).toEqual({
          runId: other.id,
          duplicate: true,
        });
        expect(await entriesOf(other.id)).toEqual([]);
      }
      expect((await rowOf(taken.id))?.wake_at).toBeNull();
      expect((await rowOf(woken.id))?.wake_at).toEqual(wakeAt as Date);
    });

    test("a retry racing its first start adds no entry; should that start have stopped, the waker queues the run", async () => {
      const run = newRun({ deliveryId: `evt_${crypto.randomUUID()}` });
      await startThatStops(run);
      const racing = newRun({ deliveryId: run.deliveryId });
      expect(await inserter.insert(runRow(racing))).toEqual({ runId: run.id, duplicate: true });
      expect(await entriesOf(run.id)).toEqual([]);

      // Two minutes on, its start having queued nothing: the waker does.
      await sql`update runs set wake_at = wake_at - interval '2 minutes' where id = ${run.id}`.execute(database.db);
      await runWakerJob({ db: database.db, runQueue }).run({ signal: new AbortController().signal, logger });
      expect(await entriesOf(run.id)).toEqual([{ run: run.id }]);
    });

    test("a start whose append fails after a retry was answered with its run keeps the run, for the waker", async () => {
      const down = createRunQueue(brokerDown, 1);
      const { promise: reached, resolve: reach } = Promise.withResolvers<void>();
      const { promise: opened, resolve: open } = Promise.withResolvers<void>();
      // The append to the broker that is down goes out only once the retry has been answered.
      const late: RunQueue = {
        ...down,
        append: async (queued) => {
          reach();
          await opened;
          return down.append(queued);
        },
      };
      const run = newRun({ deliveryId: `evt_${crypto.randomUUID()}` });
      const first = createRunInserter({ database, runQueue: late, metrics, logger })
        .insert(runRow(run))
        .catch((error: unknown) => error);
      await reached;
      const retry = newRun({ deliveryId: run.deliveryId });
      expect(await inserter.insert(runRow(retry))).toEqual({ runId: run.id, duplicate: true });
      open();
      expect(await first).toBeInstanceOf(Error);

      // The retry was told the run is accepted: it stays, with its delivery claim, and the waker queues it.
      expect((await rowOf(run.id))?.status).toBe("queued");
      expect(await claimOf(run.deliveryId as string)).toBe(run.id);
      await sql`update runs set wake_at = wake_at - interval '2 minutes' where id = ${run.id}`.execute(database.db);
      await runWakerJob({ db: database.db, runQueue }).run({ signal: new AbortController().signal, logger });
      expect(await entriesOf(run.id)).toEqual([{ run: run.id }]);
    });

    test("runs inserted in a transaction that rolls back leave no row, no entry and no delivery claim", async () => {
      const run = newRun({ deliveryId: `schedule:${new Date().toISOString()}` });
      const failed = await startRunsInTransaction(
        { db: database.db, runQueue, metrics },
        "schedule",
        async (_trx, insert) => {
          expect(await insert([run])).toHaveLength(1);
          throw new Error("the job's cursor could not be moved");
        },
      ).catch((error: unknown) => error);
      expect(String(failed)).toContain("the job's cursor could not be moved");
      expect(await rowOf(run.id)).toBeUndefined();
      expect(await claimOf(run.deliveryId as string)).toBeUndefined();
      expect(await queuedIds()).not.toContain(run.id);
    });

    test("runs inserted in a transaction are queued once it commits, not before, with the waker behind them", async () => {
      const original = newRun();
      await inserter.insert(runRow(original));
      const tick = newRun({ deliveryId: `schedule:${new Date().toISOString()}` });
      const replay = newRun({ replayOf: original.id, trigger: JSON.stringify("x".repeat(9000)) });
      const answered = await startRunsInTransaction(
        { db: database.db, runQueue, metrics },
        "schedule",
        async (_trx, insert) => {
          const inserted = await insert([tick, replay]);
          expect(inserted.map((one) => one.run.id)).toEqual([tick.id, replay.id]);
          // Written, not committed: no worker may read them yet.
          expect(await queuedIds()).not.toContain(tick.id);
          return "moved";
        },
      );
      expect(answered).toBe("moved");
      for (const id of [tick.id, replay.id]) {
        const row = await rowOf(id);
        expect(row?.status).toBe("queued");
        // Left to the waker about two minutes on, should the append below have been lost.
        expect((row?.wake_at?.getTime() ?? 0) - Date.now()).toBeGreaterThan(60_000);
      }
      expect((await rowOf(replay.id))?.replay_of).toBe(original.id);
      const entries = await queuedEntries(broker);
      expect(entries.find((entry) => entry.run === tick.id)?.start).toMatchObject({ revision: 1, waiter: null });
      // Trigger data past 8 KiB stays in the row: the entry describes the run without it.
      expect(entries.find((entry) => entry.run === replay.id)?.start).toEqual({
        account: accountId,
        flow: flowId,
        revision: 1,
        waiter: null,
      });

      // The same tick seen again by another process starts nothing.
      const twice = newRun({ deliveryId: tick.deliveryId });
      const second = await startRunsInTransaction({ db: database.db, runQueue, metrics }, "schedule", (_trx, insert) =>
        insert([twice]),
      );
      expect(second).toEqual([]);
      expect(await rowOf(twice.id)).toBeUndefined();
    });

    test("a committed run whose append fails is queued by the waker", async () => {
      const run = newRun({ deliveryId: `schedule:${new Date().toISOString()}` });
      const failed = await startRunsInTransaction(
        { db: database.db, runQueue: createRunQueue(brokerDown, 1), metrics },
        "schedule",
        (_trx, insert) => insert([run]),
      ).catch((error: unknown) => error);
      expect(failed).toBeInstanceOf(Error);
      expect((await rowOf(run.id))?.status).toBe("queued");
      expect(await queuedIds()).not.toContain(run.id);

      // Two minutes on: the waker finds it.
      await sql`update runs set wake_at = now() where id = ${run.id}`.execute(database.db);
      await runWakerJob({ db: database.db, runQueue }).run({ signal: new AbortController().signal, logger });
      expect(await queuedIds()).toContain(run.id);
    });

    test("a flow that is deleted starts nothing, by any path", async () => {
      const run = newRun({ flowId: deletedFlowId });
      const refused = await inserter.insert(runRow(run)).catch((error: unknown) => error);
      expect(isDomainError(refused) && refused.code).toBe("not_found");
      const inserted = await startRunsInTransaction(
        { db: database.db, runQueue, metrics },
        "schedule",
        (_trx, insert) => insert([newRun({ flowId: deletedFlowId })]),
      );
      expect(inserted).toEqual([]);
      expect(await recordFilteredRun(database.db, newRun({ flowId: deletedFlowId }))).toBe(false);
      expect(await database.db.selectFrom("runs").select("id").where("flow_id", "=", deletedFlowId).execute()).toEqual(
        [],
      );
    });

    test("a filtered delivery is recorded final from the start, never queued nor counted as started", async () => {
      const before = await metrics.read(accountId, "runs.started");
      const run = newRun();
      expect(await recordFilteredRun(database.db, run)).toBe(true);
      const row = await rowOf(run.id);
      expect(row).toMatchObject({ status: "filtered", queue_reason: null, wake_at: null, revision: 1 });
      expect(row?.finished_at).toBeInstanceOf(Date);
      expect(await queuedIds()).not.toContain(run.id);
      expect(await metrics.read(accountId, "runs.started")).toBe(before);
    });
  });
}

/** The platform's code, relative to the repository (tests, test helpers and migrations aside). */
async function platformSources(root: string): Promise<string[]> {
  const files: string[] = [];
  for (const base of ["packages/core/src", "packages/db/src", "apps/api/src", "apps/worker/src"]) {
    for (const name of await readdir(join(root, base), { recursive: true })) {
      const path = `${base}/${name}`;
      if (path.endsWith(".ts") && !/\.test\.ts$|test-fixtures|testing|\/migrations\//.test(path)) files.push(path);
    }
  }
  return files;
}

// The INSERT itself is the function `run_insert`, made by a migration.
test("nothing but runs/insert.ts writes a new row into runs", async () => {
  const root = join(import.meta.dir, "../../../..");
  const writers: string[] = [];
  for (const path of await platformSources(root)) {
    const text = await Bun.file(join(root, path)).text();
    if (/insert\s+into\s+runs\b|insertInto\(\s*["'`]runs["'`]|\brun_insert\s*\(/i.test(text)) writers.push(path);
  }
  expect(writers).toEqual(["packages/core/src/runs/insert.ts"]);
});
