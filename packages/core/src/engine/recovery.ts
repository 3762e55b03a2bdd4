import { randomUUID } from "node:crypto";
import { sql } from "kysely";
import { type Broker, PLATFORM_SCOPE } from "../broker/port.ts";
import type { Services } from "../services.ts";
import { sleep } from "../sleep.ts";
import type { PeriodicJob } from "../worker/periodic.ts";
import { RUN_STREAM } from "./consumer.ts";

/** Where the marker lives: a key Redis loses with the rest of its data. */
const MARKER_BUCKET = "run-recovery";
const MARKER_KEY = "broker-data";
const RECOVERED = "recovered";
/** Runs queued again per statement. */
const PAGE = 500;

/** Another recovery took over (Redis lost its data again, or this one's marker expired). */
class Superseded extends Error {
  override name = "Superseded";
}

/**
 * The marker that says "this Redis holds the run stream PostgreSQL's runs were queued on".
 * Absent: Redis lost its data (it runs without persistence), or never had it. While a
 * recovery is under way it names that recovery and expires unless renewed, so a recovery
 * whose process died is started again by another; once done it stays for good.
 */
class RecoveryMarker {
  private readonly mine = `recovering ${randomUUID()}`;

  constructor(
    private readonly broker: Broker,
    private readonly ttlSeconds: number,
  ) {}

  async present(): Promise<boolean> {
    return (await this.broker.kvGet(PLATFORM_SCOPE, MARKER_BUCKET, MARKER_KEY)) !== null;
  }

  /** True when this process is the one to recover (the marker was absent and is now its own). */
  async take(): Promise<boolean> {
    const { ok } = await this.broker.kvCompareAndSet(PLATFORM_SCOPE, MARKER_BUCKET, MARKER_KEY, this.mine, 0, {
      ttlSeconds: this.ttlSeconds,
    });
    return ok;
  }

  /** Renews the marker; throws Superseded when it is no longer this recovery's. */
  async keep(value = this.mine, ttlSeconds: number | undefined = this.ttlSeconds): Promise<void> {
    const current = await this.broker.kvGet(PLATFORM_SCOPE, MARKER_BUCKET, MARKER_KEY);
    // Compared by value first: a Redis that lost its data counts revisions from 1 again.
    if (current?.value !== this.mine) throw new Superseded();
    const options = ttlSeconds === undefined ? {} : { ttlSeconds };
    const renewed = await this.broker.kvCompareAndSet(
      PLATFORM_SCOPE,
      MARKER_BUCKET,
      MARKER_KEY,
      value,
      current.revision,
      options,
    );
    if (!renewed.ok) throw new Superseded();
  }

  /** The recovery is complete: the marker stays until Redis loses its data again. */
  finish(): Promise<void> {
    return this.keep(RECOVERED, undefined);
  }
}

const append = (broker: Broker, ids: string[]) =>
  Promise.all(ids.map((id) => broker.append(PLATFORM_SCOPE, RUN_STREAM, JSON.stringify({ run: id }))));

/**
 * Puts back on the run stream what Redis lost with its data, from PostgreSQL, which is the
 * record (Redis runs without persistence here and in CI). Redis-only: the PostgreSQL
 * broker keeps its streams in the same database as the runs.
 *
 * Why a marker and not a periodic sweep of old queued runs: the stream holds no run ids
 * PostgreSQL could be compared with cheaply, and a run may wait in a long backlog for
 * minutes, so "queued for long" does not mean "lost"; re-queuing on age would add entries
 * to every backlog. The marker says exactly when the stream was lost, and costs one GET
 * per check (every `everyMs`, in one process of the deployment).
 *
 * When the marker is missing, one process (compare-and-set) recovers:
 *
 * 1. `since` is the database's clock now; the runs held by a worker (`held_by`) are noted.
 * 2. After `settleMs`, starts that were between their INSERT and their append when Redis
 *    went away have settled (appended, or deleted and answered 503); then every run
 *    accepted before `since` that is still queued and unheld is appended again. A run whose
 *    entry survived (appended after the restart) gets a second entry; the claim lets one
 *    delivery hold a run at a time, and an ended run is never claimed, so that costs one
 *    empty claim.
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
  services: Pick<Services, "db" | "broker" | "config">,
  options: { everyMs?: number; settleMs?: number } = {},
): PeriodicJob {
  const { db, broker } = services;
  const { leaseMs } = services.config.runs;
  const settleMs = options.settleMs ?? 5000;
  const watchEveryMs = Math.min(1000, leaseMs / 3);
  const markerTtlSeconds = Math.ceil(Math.max(60_000, 4 * settleMs, 4 * watchEveryMs) / 1000);
  return {
    name: "run-recovery",
    everyMs: options.everyMs ?? 2000,
    async run({ signal, logger }) {
      const marker = new RecoveryMarker(broker, markerTtlSeconds);
      if ((await marker.present()) || !(await marker.take())) return;
      logger.warn(
        "the broker has no record of the run stream (Redis lost its data, or is new): recovering from the database",
      );
      try {
        const { rows } = await sql<{ now: Date }>`select now() as now`.execute(db);
        const since = (rows[0] as { now: Date }).now;
        let watched = await heldRuns(db);
        await sleep(settleMs, signal);
        if (signal.aborted) return;

        let requeued = 0;
        let after = "00000000-0000-0000-0000-000000000000";
        while (!signal.aborted) {
          await marker.keep();
          const page = await sql<{ id: string }>`
            select id from runs
            where id > ${after}::uuid and status in ('queued', 'running') and held_by is null and wake_at is null
              and created_at < ${since}
            order by id limit ${PAGE}`.execute(db);
          const ids = page.rows.map((row) => row.id);
          await append(broker, ids);
          requeued += ids.length;
          if (ids.length < PAGE) break;
          after = ids.at(-1) as string;
        }

        let released = 0;
        while (watched.length > 0 && !signal.aborted) {
          await marker.keep();
          const ids = await releaseExpired(db, watched);
          await append(broker, ids);
          released += ids.length;
          watched = await stillHeld(db, watched);
          if (watched.length > 0) await sleep(watchEveryMs, signal);
        }
        if (signal.aborted) return;
        await marker.finish();
        logger.warn({ requeued, released }, "run stream recovered from the database");
      } catch (error) {
        if (!(error instanceof Superseded)) throw error;
        logger.warn("another recovery took over");
      }
    },
  };
}

interface HeldRun {
  id: string;
  holder: string;
}

/** Every run a worker holds now (one scan: this runs only after Redis lost its data). */
async function heldRuns(db: Services["db"]): Promise<HeldRun[]> {
  const { rows } = await sql<{ id: string; held_by: string }>`
    select id, held_by from runs where held_by is not null and status in ('queued', 'running')`.execute(db);
  return rows.map((row) => ({ id: row.id, holder: row.held_by }));
}

/** Lets go of the watched runs still held by the same holder whose lease is over; answers their ids. */
async function releaseExpired(db: Services["db"], watched: HeldRun[]): Promise<string[]> {
  const { rows } = await sql<{ id: string }>`
    update runs as r set held_by = null
    from jsonb_to_recordset(${JSON.stringify(watched)}::jsonb) as v(id uuid, holder text)
    where r.id = v.id and r.held_by = v.holder and (r.lease_until is null or r.lease_until < now())
    returning r.id`.execute(db);
  return rows.map((row) => row.id);
}

/** The watched runs their holder still holds (alive, renewing its lease). */
async function stillHeld(db: Services["db"], watched: HeldRun[]): Promise<HeldRun[]> {
  const { rows } = await sql<{ id: string; held_by: string }>`
    select r.id, r.held_by from runs as r
    join jsonb_to_recordset(${JSON.stringify(watched)}::jsonb) as v(id uuid, holder text)
      on r.id = v.id and r.held_by = v.holder`.execute(db);
  return rows.map((row) => ({ id: row.id, holder: row.held_by }));
}
