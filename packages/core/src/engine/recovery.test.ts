import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type DatabaseHandle, openDatabase } from "@platform/db";
import { openTestDatabase, testEnv } from "@platform/db/testing";
import { sql } from "kysely";
import { createBroker } from "../broker/index.ts";
import { type Broker, laneTurnOf, PLATFORM_SCOPE } from "../broker/port.ts";
import { eventually, randomScope } from "../broker/test-backends.ts";
import type { CoreConfig } from "../config.ts";
import { createLogger } from "../logger.ts";
import { createRunLeases } from "./leases.ts";
import { runRecoveryJob } from "./recovery.ts";
import { createRunQueue, RUN_STREAM } from "./run-queue.ts";
import { createRunStore } from "./store.ts";
import { insertAccountWithFlow } from "./test-fixtures.ts";

/**
 * Run leases and the recovery after Redis lost its data, on PostgreSQL and Redis, with run
 * rows written by hand: which runs go back on the stream, which are released, and which a
 * live holder keeps.
 */
const skip = !testEnv.DATABASE_URL || !testEnv.REDIS_URL;
const logger = createLogger({ level: "silent", name: "recovery-test" });

describe.skipIf(skip)(
  `run leases and recovery${skip ? " (skipped: DATABASE_URL and REDIS_URL are both needed)" : ""}`,
  () => {
    let database: DatabaseHandle;
    let broker: Broker;
    const accountId = "acct-recovery";
    const flowId = crypto.randomUUID();

    beforeAll(async () => {
      database = await openTestDatabase("postgres");
      broker = await createBroker({ redisUrl: testEnv.REDIS_URL, database, namespace: randomScope("recovery") });
      await insertAccountWithFlow(database.db, accountId, flowId);
    }, 60_000);
    afterAll(async () => {
      await broker?.deleteStream(PLATFORM_SCOPE, RUN_STREAM);
      await broker?.close();
      await database?.close();
    });

    /** A run row as a worker left it: queued, or running held by `holder` with its lease ending `leaseEnds` from now. */
    async function run(state: {
      holder?: string;
      leaseEnds?: string;
      status?: "queued" | "running" | "succeeded";
      flow?: string;
    }) {
      const id = Bun.randomUUIDv7();
      await sql`
      insert into runs (id, account_id, flow_id, revision, status, trigger, held_by, lease_until)
      values (${id}, ${accountId}, ${state.flow ?? flowId}, 1, ${state.status ?? (state.holder ? "running" : "queued")}, '{}',
        ${state.holder ?? null}, now() + ${state.leaseEnds ?? "0 s"}::interval)`.execute(database.db);
      return id;
    }
    const holderOf = async (id: string) =>
      (await database.db.selectFrom("runs").select("held_by").where("id", "=", id).executeTakeFirstOrThrow()).held_by;
    /** The runs queued on a partition: each account's lane admitted whole, as its turn would, then the stream read. */
    const queuedOnStream = async (scope = PLATFORM_SCOPE) => {
      for (const entry of await broker.readRange(scope, RUN_STREAM, { limit: 1000 })) {
        const turn = laneTurnOf(entry.payload);
        if (turn) await broker.admitLane(scope, RUN_STREAM, turn, 1000);
      }
      return (await broker.readRange(scope, RUN_STREAM, { limit: 1000 })).flatMap((entry) =>
        laneTurnOf(entry.payload) ? [] : [(JSON.parse(entry.payload) as { run: string }).run],
      );
    };

    test("a held run's lease is renewed while it is held, and lost when another delivery takes the run", async () => {
      const id = await run({});
      const store = createRunStore(database, 1500);
      const leases = createRunLeases(database, 1500);
      try {
        const claimedAt = Date.now();
        const claimed = await store.claim(id, "1-1", 1);
        if (!claimed) throw new Error("not claimed");
        const lease = leases.hold(id, claimed.holder, claimedAt);
        const leaseUntil = async () =>
          (
            await database.db.selectFrom("runs").select("lease_until").where("id", "=", id).executeTakeFirstOrThrow()
          ).lease_until?.getTime() ?? 0;
        const first = await leaseUntil();
        await eventually(async () => (await leaseUntil()) > first);
        expect(lease.signal.aborted).toBe(false);

        // The entry's next delivery takes the run over (its worker seemed dead): this one stops.
        expect(await store.claim(id, "1-1", 2)).not.toBeNull();
        await eventually(() => lease.signal.aborted);
        expect(String(lease.signal.reason)).toContain("the run's lease was lost (taken over)");
        lease.end();
        await sql`update runs set status = 'succeeded', held_by = null where id = ${id}`.execute(database.db);
      } finally {
        leases.close();
      }
    });

    test("a holder that cannot renew its lease (the database unreachable) gives the run up", async () => {
      const id = await run({});
      const store = createRunStore(database, 1500);
      const leases = createRunLeases(database, 1500);
      const admin = await openDatabase({ kind: "postgres", url: testEnv.DATABASE_URL as string, poolSize: 1 });
      const { rows } = await sql<{ name: string }>`select current_database() as name`.execute(database.db);
      const name = (rows[0] as { name: string }).name;
      try {
        const claimedAt = Date.now();
        const claimed = await store.claim(id, "2-1", 1);
        if (!claimed) throw new Error("not claimed");
        const lease = leases.hold(id, claimed.holder, claimedAt);
        await sql`alter database ${sql.id(name)} with allow_connections false`.execute(admin.db);
        await sql`select pg_terminate_backend(pid) from pg_stat_activity where datname = ${name}`.execute(admin.db);
        await eventually(() => lease.signal.aborted, 10_000);
        expect(String(lease.signal.reason)).toContain("the run's lease was lost (not renewed in time)");
        lease.end();
      } finally {
        leases.close();
        await sql`alter database ${sql.id(name)} with allow_connections true`.execute(admin.db);
        await admin.close();
      }
      await eventually(async () => {
        await sql`update runs set status = 'succeeded', held_by = null where id = ${id}`.execute(database.db);
        return true;
      });
    }, 30_000);

    test("after a loss, queued runs go back on the stream and runs of dead holders are released; live holders keep theirs", async () => {
      const config = { runs: { leaseMs: 1000 } } as CoreConfig;
      const job = runRecoveryJob(
        { db: database.db, broker, config, runQueue: createRunQueue(broker, 1) },
        { settleMs: 50 },
      );
      const queued = await run({});
      const dead = await run({ holder: "lost-1/1", leaseEnds: "-1 s" });
      const live = await run({ holder: "lost-2/1", leaseEnds: "1 hour" });
      const ended = await run({ status: "succeeded" });

      const stopping = new AbortController();
      const recovering = job.run({ signal: stopping.signal, logger });
      await eventually(async () => (await queuedOnStream()).includes(dead));
      expect((await queuedOnStream()).sort()).toEqual([queued, dead].sort());
      expect(await holderOf(dead)).toBeNull();
      expect(await holderOf(live)).toBe("lost-2/1");

      // The live holder ends its run: nothing is left to watch, and the recovery completes.
      await sql`update runs set status = 'succeeded', held_by = null where id = ${live}`.execute(database.db);
      await recovering;
      expect(await queuedOnStream()).not.toContain(ended);

      // The marker is back: later checks find the stream intact and append nothing.
      await job.run({ signal: stopping.signal, logger });
      expect((await queuedOnStream()).sort()).toEqual([queued, dead].sort());
    }, 30_000);

    test("with the queue in partitions, only a partition whose data holder changed is recovered", async () => {
      const config = { runs: { leaseMs: 1000 } } as CoreConfig;
      const runQueue = createRunQueue(broker, 4);
      const job = runRecoveryJob({ db: database.db, broker, config, runQueue }, { settleMs: 50 });
      // Flows until two partitions have one each.
      const flows = new Map<number, string>();
      while (flows.size < 2) {
        const flow = crypto.randomUUID();
        const partition = runQueue.partitionOf(flow);
        if (partition === 0 || flows.has(partition)) continue;
        await insertAccountWithFlow(database.db, `acct-${flow}`, flow);
        await sql`update flows set account_id = ${accountId} where id = ${flow}`.execute(database.db);
        flows.set(partition, flow);
      }
      const [[first, firstFlow], [second, secondFlow]] = [...flows] as [[number, string], [number, string]];
      const scopeOf = (partition: number) => runQueue.partitions[partition]?.scope as string;
      // A fresh deployment: the partitions never marked are recovered, together (one scan of the runs).
      const stopping = new AbortController();
      const lines: string[] = [];
      const watching = createLogger({
        level: "warn",
        name: "recovery-test",
        destination: { write: (line: string) => lines.push(line) },
      });
      await job.run({ signal: stopping.signal, logger: watching });
      const recovered = lines
        .map((line) => JSON.parse(line) as { msg: string; partitions?: number[] })
        .filter((line) => line.msg === "run queue recovered from the database");
      expect(recovered.map((line) => line.partitions)).toEqual([[1, 2, 3]]);
      for (const partition of [first, second]) await broker.deleteStream(scopeOf(partition), RUN_STREAM);

      const inFirst = await run({ flow: firstFlow });
      const inSecond = await run({ flow: secondFlow });
      // The second partition's primary was replaced by a replica: its marker names the old holder.
      await broker.kvPut(scopeOf(second), "run-recovery", "broker-data", "recovered a-primary-that-failed");
      await job.run({ signal: stopping.signal, logger });
      expect(await queuedOnStream(scopeOf(second))).toContain(inSecond);
      expect(await queuedOnStream(scopeOf(first))).not.toContain(inFirst);

      // Marked whole again with the holder it has now: the next check leaves it alone.
      const marker = await broker.kvGet(scopeOf(second), "run-recovery", "broker-data");
      expect(marker?.value).toBe(`recovered ${await broker.dataHolder(scopeOf(second))}`);
      await job.run({ signal: stopping.signal, logger });
      expect((await queuedOnStream(scopeOf(second))).filter((id) => id === inSecond)).toHaveLength(1);
      for (const id of [inFirst, inSecond]) {
        await sql`update runs set status = 'succeeded' where id = ${id}`.execute(database.db);
      }
    }, 30_000);
  },
);
