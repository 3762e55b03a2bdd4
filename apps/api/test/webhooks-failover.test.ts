import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { createBroker } from "@platform/core";
import {
  createRunQueue,
  type LocalRedisCluster,
  partitionScope,
  redisClusterMissing,
  scopeSlot,
  startLocalRedisCluster,
} from "@platform/core/testing";
import { testEnv } from "@platform/db/testing";
import {
  CountingUpstream,
  type Delivered,
  deliver,
  deliverAll,
  endedRuns,
  PlatformProcesses,
} from "./process-helpers.ts";

/**
 * Issue 21's failover test, on real processes in scale-out mode against a Redis Cluster of
 * three primaries with a replica each (16 run queue partitions). The primary serving the
 * flow's partition is killed while webhooks are being acknowledged, at the worst moment:
 * its replica has been kept from reading (SIGSTOP) behind 48 MB of other writes, so the
 * newest entries it is promoted without are certain to be lost, as asynchronous replication
 * allows. The upstream holds every call, so two workers of 64 runs each are full and the
 * rest of the accepted runs wait in the partition's stream.
 *
 * PostgreSQL is the record: the recovery notices that this partition's data holder changed
 * (not that all of Redis lost its data) and queues its waiting runs again; the workers,
 * alive, keep and finish the runs they hold. Every acknowledged webhook ends as one
 * succeeded run, and the upstream sees each once.
 */
const skip = !testEnv.DATABASE_URL ? "DATABASE_URL is not set" : redisClusterMissing();
const PER_WORKER = 64;
const BEFORE = 100;
const WHILE_BEHIND = 200;
const AFTER = 100;

describe.skipIf(Boolean(skip))(
  `webhooks while a Redis Cluster primary fails over${skip ? ` (skipped: ${skip})` : ""}`,
  () => {
    let cluster: LocalRedisCluster;
    let platform: PlatformProcesses;
    const namespace = `failover-${randomBytes(4).toString("hex")}`;
    const upstream = new CountingUpstream(true);

    beforeAll(async () => {
      cluster = await startLocalRedisCluster();
      platform = await PlatformProcesses.start({
        redisUrl: cluster.url,
        env: {
          WORKER_CONCURRENCY: "1",
          RUN_LEASE_MS: "6000",
          RUN_QUEUE_PARTITIONS: "16",
          BROKER_NAMESPACE: namespace,
        },
      });
    }, 120_000);

    afterAll(async () => {
      upstream.stop();
      await platform?.stop();
      await cluster?.stop();
    });

    /** A sender as the providers are: a 503 is delivered again until it is acknowledged. */
    const untilAcknowledged = async (url: string, n: number): Promise<Delivered> => {
      for (;;) {
        const answer = await deliver(url, n);
        if (answer.status !== 503) return answer;
        expect(answer.retryAfter).toBe("5");
        await Bun.sleep(100);
      }
    };
    const range = (from: number, count: number) => Array.from({ length: count }, (_, i) => from + i);

    test("every acknowledged webhook completes exactly once, though the promoted replica lacks the newest entries", async () => {
      const { flowId, webhookUrl } = await platform.flow([upstream.step()]);
      platform.worker("worker A");
      platform.worker("worker B");
      const partition = createRunQueue({} as never, 16).partitionOf(flowId);
      const scope = `${namespace}/${partitionScope(partition)}`;
      const primary = await cluster.primaryOf(scopeSlot(scope));
      const replica = await cluster.replicaOf(primary);

      const before = await deliverAll(webhookUrl, range(0, BEFORE), 16);
      expect(before.filter((answer) => answer.status !== 200)).toEqual([]);
      await platform.until("the workers to hold every run so far", () => (upstream.held === BEFORE ? true : undefined));
      // The partition was checked: its marker names the holder its recovery started from.
      const broker = await createBroker({ redisUrl: cluster.url, database: platform.database, namespace });
      const markedHolder = async () => {
        const value = (await broker.kvGet(partitionScope(partition), "run-recovery", "broker-data").catch(() => null))
          ?.value;
        return value?.split(" ")[1];
      };
      const holderBefore = await platform.until("the partition to be checked", markedHolder);
      // The replica falls behind: what the primary acknowledges from now on it never receives.
      cluster.pause(replica);
      await cluster.fill(primary, 48 * 1024 * 1024);
      const whileBehind = await deliverAll(webhookUrl, range(BEFORE, WHILE_BEHIND), 16);
      expect(whileBehind.filter((answer) => answer.status !== 200)).toEqual([]);
      await platform.until("both workers to be full", () => (upstream.held === 2 * PER_WORKER ? true : undefined));
      await cluster.kill(primary);
      cluster.resume(replica);

      const after = await deliverAll(webhookUrl, range(BEFORE + WHILE_BEHIND, AFTER), 8, untilAcknowledged);
      expect(after.filter((answer) => answer.status !== 200)).toEqual([]);
      await cluster.healthy();
      expect(await cluster.primaryOf(scopeSlot(scope))).toBe(replica);

      upstream.open();

      const acknowledged = [...before, ...whileBehind, ...after].map((answer) => answer.body.run_id as string);
      expect(new Set(acknowledged).size).toBe(BEFORE + WHILE_BEHIND + AFTER);
      const runs = await endedRuns(platform, flowId, acknowledged.length);
      expect(runs.map((run) => run.id).sort()).toEqual([...acknowledged].sort());
      expect(runs.filter((run) => run.status !== "succeeded").map((run) => run.error)).toEqual([]);
      for (const n of range(0, BEFORE + WHILE_BEHIND + AFTER))
        expect({ n, hits: upstream.hits.get(n) }).toEqual({ n, hits: 1 });

      // The recovery noticed this partition's new holder (not a loss of all of Redis) and made it whole.
      const holderAfter = await broker.dataHolder(partitionScope(partition));
      expect(holderAfter).not.toBe(holderBefore);
      await platform.until("the partition to be marked whole again", async () =>
        (await broker.kvGet(partitionScope(partition), "run-recovery", "broker-data"))?.value ===
        `recovered ${holderAfter}`
          ? true
          : undefined,
      );
      await broker.close();
    }, 300_000);
  },
);
