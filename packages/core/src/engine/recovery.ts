import { randomUUID } from "node:crypto";
import { sql } from "kysely";
import type { Broker } from "../broker/port.ts";
import { messageOf } from "../errors.ts";
import type { Logger } from "../logger.ts";
import type { Services } from "../services.ts";
import { sleep } from "../sleep.ts";
import type { Queue } from "../worker/catalog.ts";
import type { PeriodicJob, PeriodicJobContext } from "../worker/periodic.ts";
import type { QueuedRun } from "./run-queue.ts";

/** Where a partition's marker lives: a key of the partition's scope, lost with its stream. */
const MARKER_BUCKET = "run-recovery";
const MARKER_KEY = "broker-data";
const RECOVERING = "recovering ";
const RECOVERED = "recovered ";
/** Runs queued again per statement. */
const PAGE = 500;

/** Another recovery took over (the partition was lost again, or this one's marker expired). */
class Superseded extends Error {
  override name = "Superseded";
}

/**
 * The marker that says "this partition's stream holds what PostgreSQL's runs were queued
 * on": `recovered <holder>`, the broker's `dataHolder` of the partition's scope when it was
 * last made whole. Absent (Redis lost its data, or never had it) or naming another holder
 * (a replica was promoted, and may lack the newest entries): the partition is recovered.
 * While a recovery is under way it reads `recovering <holder> <recovery>` and expires
 * unless renewed, so a recovery whose process died is started again by another; one that
 * finds the holder changed under it (a second loss) gives way to a recovery for the new one.
 */
class RecoveryMarker {
  private readonly mine: string;

  constructor(
    private readonly broker: Broker,
    private readonly scope: string,
    private readonly ttlSeconds: number,
    private readonly holder: string,
  ) {
    this.mine = `${RECOVERING}${holder} ${randomUUID()}`;
  }

  /** True when this process is the one to recover (the marker named another holder, or none, and is now its own). */
  async take(): Promise<boolean> {
    const current = await this.broker.kvGet(this.scope, MARKER_BUCKET, MARKER_KEY);
    const { holder } = this;
    if (current?.value === `${RECOVERED}${holder}` || current?.value.startsWith(`${RECOVERING}${holder} `))
      return false;
    const { ok } = await this.broker.kvCompareAndSet(
      this.scope,
      MARKER_BUCKET,
      MARKER_KEY,
      this.mine,
      current?.revision ?? 0,
      { ttlSeconds: this.ttlSeconds },
    );
    return ok;
  }

  /** Renews the marker; throws Superseded when it is no longer this recovery's, or the data changed holder again. */
  async keep(value = this.mine, ttlSeconds: number | undefined = this.ttlSeconds): Promise<void> {
    if ((await this.broker.dataHolder(this.scope)) !== this.holder) throw new Superseded();
    const current = await this.broker.kvGet(this.scope, MARKER_BUCKET, MARKER_KEY);
    // Compared by value first: a Redis that lost its data counts revisions from 1 again.
    if (current?.value !== this.mine) throw new Superseded();
    const options = ttlSeconds === undefined ? {} : { ttlSeconds };
    const renewed = await this.broker.kvCompareAndSet(
      this.scope,
      MARKER_BUCKET,
      MARKER_KEY,
      value,
      current.revision,
      options,
    );
    if (!renewed.ok) throw new Superseded();
  }

  /** The partition is whole again as of its holder: the marker stays until its data is lost again. */
  finish(): Promise<void> {
    return this.keep(`${RECOVERED}${this.holder}`, undefined);
  }
}

/**
 * Puts back on the run queue what Redis lost, partition by partition, from PostgreSQL,
 * which is the record (Redis runs without persistence here and in CI, and a promoted
 * replica lacks what its primary had not yet sent it). Redis-only: the PostgreSQL broker
 * keeps its streams in the same database as the runs.
 *
 * Why a marker and not a periodic sweep of old queued runs: the stream holds no run ids
 * PostgreSQL could be compared with cheaply, and a run may wait in a long backlog for
 * minutes, so "queued for long" does not mean "lost"; re-queuing on age would add entries
 * to every backlog. The marker and the broker's `dataHolder` say exactly when a partition
 * may have lost entries, for two GETs per partition per check (every `everyMs`, in one
 * process of the deployment).
 *
 * Each run of the job checks every partition, and goes on checking those not under
 * recovery while any is (a recovery can watch held runs for minutes). When partitions'
 * markers are missing or name another holder, one process (compare-and-set, per
 * partition) recovers them, together:
 *
 * 1. `since` is the database's clock now; their runs held by a worker (`held_by`) are noted.
 * 2. After `settleMs`, starts that were between their INSERT and their append when Redis
 *    went away have settled (appended, or deleted and answered 503); then every run of those
 *    partitions accepted before `since` that is still queued and unheld is appended again. A
 *    run whose entry survived gets a second entry; the claim lets one delivery hold a run at
 *    a time, and an ended run is never claimed, so that costs one empty claim.
 * 3. The runs noted in 1 may be held by entries Redis lost. Each is released (and appended
 *    again) only once its lease (RUN_LEASE_MS, leases.ts) is over, that is, once its worker
 *    has stopped renewing it: a live worker renews it and finishes the run itself, and one
 *    that cannot renew gives the run up first, so no step runs twice at once. Runs that end
 *    or change holder meanwhile are dropped from the watch; it ends when none is left.
 *
 * Appending again is harmless whatever the timing, so a recovery that dies half-way is
 * simply done again by the next (its marker expires).
 */
export function runRecoveryJob(
  services: Pick<Services, "db" | "broker" | "config" | "runQueue">,
  options: { everyMs?: number; settleMs?: number } = {},
): PeriodicJob {
  const { db, broker, runQueue } = services;
  const { leaseMs } = services.config.runs;
  const everyMs = options.everyMs ?? 2000;
  const settleMs = options.settleMs ?? 5000;
  const watchEveryMs = Math.min(1000, leaseMs / 3);
  const markerTtlSeconds = Math.ceil(Math.max(60_000, 4 * settleMs, 4 * watchEveryMs) / 1000);

  /** Takes the markers of the partitions that need a recovery now; answers those this process took. */
  async function takeMarkers(partitions: number[], logger: Logger): Promise<Map<number, RecoveryMarker>> {
    const taken = await Promise.all(
      partitions.map(async (partition): Promise<[number, RecoveryMarker] | null> => {
        try {
          const { scope } = runQueue.partitions[partition] as Queue;
          const marker = new RecoveryMarker(broker, scope, markerTtlSeconds, await broker.dataHolder(scope));
          return (await marker.take()) ? [partition, marker] : null;
        } catch (error) {
          logger.warn({ partition, err: messageOf(error) }, "could not check a run queue partition; tried again soon");
          return null;
        }
      }),
    );
    return new Map(taken.filter((entry) => entry !== null));
  }

  /**
   * Recovers the partitions whose markers were taken, together (one scan of the runs for
   * all of them: after a loss of all of Redis, every partition at once). A partition whose
   * marker is superseded meanwhile drops out; the others go on.
   */
  async function recover(markers: Map<number, RecoveryMarker>, { signal, logger }: PeriodicJobContext) {
    const partitions = [...markers.keys()];
    logger.warn(
      { partitions },
      "the broker may lack run queue entries (Redis lost its data, a replica took over, or it is new): recovering from the database",
    );
    const ours = (run: { flowId: string }) => markers.has(runQueue.partitionOf(run.flowId));
    const keepAll = async () => {
      for (const [partition, marker] of markers) {
        try {
          await marker.keep();
        } catch (error) {
          if (!(error instanceof Superseded)) throw error;
          markers.delete(partition);
          logger.warn({ partition }, "another recovery took over this partition");
        }
      }
      return markers.size > 0;
    };
    const { rows } = await sql<{ now: Date }>`select now() as now`.execute(db);
    const since = (rows[0] as { now: Date }).now;
    let watched = (await heldRuns(db)).filter(ours);
    await sleep(settleMs, signal);
    if (signal.aborted) return;

    let requeued = 0;
    let after = "00000000-0000-0000-0000-000000000000";
    while (!signal.aborted) {
      if (!(await keepAll())) return;
      const page = await sql<QueuedRun>`
        select id, flow_id as "flowId", account_id as "accountId" from runs
        where id > ${after}::uuid and status in ('queued', 'running') and held_by is null and wake_at is null
          and created_at < ${since}
        order by id limit ${PAGE}`.execute(db);
      const runs = page.rows.filter(ours);
      await runQueue.requeue(runs);
      requeued += runs.length;
      if (page.rows.length < PAGE) break;
      after = page.rows.at(-1)?.id as string;
    }

    let released = 0;
    while (watched.length > 0 && !signal.aborted) {
      if (!(await keepAll())) return;
      const runs = await releaseExpired(db, watched.filter(ours));
      await runQueue.requeue(runs);
      released += runs.length;
      watched = (await stillHeld(db, watched)).filter(ours);
      if (watched.length > 0) await sleep(watchEveryMs, signal);
    }
    if (signal.aborted || !(await keepAll())) return;
    for (const marker of markers.values()) await marker.finish();
    logger.warn({ partitions: [...markers.keys()], requeued, released }, "run queue recovered from the database");
  }

  return {
    name: "run-recovery",
    everyMs,
    async run({ signal, logger }) {
      // Partitions under recovery here; the others are checked again every `everyMs` meanwhile.
      const underway = new Map<number, Promise<void>>();
      for (;;) {
        const idle = runQueue.partitions.map((_, partition) => partition).filter((p) => !underway.has(p));
        const markers = signal.aborted ? new Map() : await takeMarkers(idle, logger);
        if (markers.size > 0) {
          const taken = [...markers.keys()];
          const recovery = recover(markers, { signal, logger })
            .catch((error: unknown) => {
              logger.warn({ partitions: taken, err: messageOf(error) }, "run queue recovery failed; tried again soon");
            })
            .finally(() => {
              for (const partition of taken) underway.delete(partition);
            });
          for (const partition of taken) underway.set(partition, recovery);
        }
        await Promise.race([Promise.all(underway.values()), sleep(everyMs, signal)]);
        if (underway.size === 0 || signal.aborted) break;
      }
      await Promise.all(underway.values());
    },
  };
}

interface HeldRun {
  id: string;
  flowId: string;
  holder: string;
}

/** Every run a worker holds now (one scan: this runs only after Redis lost its data). */
async function heldRuns(db: Services["db"]): Promise<HeldRun[]> {
  const { rows } = await sql<HeldRun>`
    select id, flow_id as "flowId", held_by as holder from runs
    where held_by is not null and status in ('queued', 'running')`.execute(db);
  return rows;
}

/** Lets go of the watched runs still held by the same holder whose lease is over; answers them. */
async function releaseExpired(db: Services["db"], watched: HeldRun[]): Promise<QueuedRun[]> {
  const { rows } = await sql<QueuedRun>`
    update runs as r set held_by = null
    from jsonb_to_recordset(${JSON.stringify(watched)}::jsonb) as v(id uuid, holder text)
    where r.id = v.id and r.held_by = v.holder and (r.lease_until is null or r.lease_until < now())
    returning r.id, r.flow_id as "flowId", r.account_id as "accountId"`.execute(db);
  return rows;
}

/** The watched runs their holder still holds (alive, renewing its lease). */
async function stillHeld(db: Services["db"], watched: HeldRun[]): Promise<HeldRun[]> {
  const { rows } = await sql<HeldRun>`
    select r.id, r.flow_id as "flowId", r.held_by as holder from runs as r
    join jsonb_to_recordset(${JSON.stringify(watched)}::jsonb) as v(id uuid, holder text)
      on r.id = v.id and r.held_by = v.holder`.execute(db);
  return rows;
}
