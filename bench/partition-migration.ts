/**
 * How long partitioning runs by day holds up their writers (issue 21): the migrations
 * 20261127010000 to 20261127020400 run on a database of `--runs` runs (default 1,000,000,
 * two steps each, one in twenty with a delivery id) while writers go on as the platform
 * writes (a run's insert, its steps' insert, a checkpoint of its status, each its own
 * statement, `--writers` at once).
 *
 *   bun bench/partition-migration.ts [--runs N] [--writers N] [--modes postgres,embedded]
 *
 * postgres: the writers run for 5 s before the migrations (the baseline), through them and
 * 5 s after; each migration's duration is printed with the longest any write waited while
 * it ran, beside the baseline's p99 and longest write. embedded: PGlite has one connection,
 * so a migration stops everything for as long as it takes (the platform migrates at start,
 * before it listens): each migration's duration is what there is to measure.
 */
import { type Kysely, sql } from "kysely";
import { Migrator } from "kysely/migration";
import { openDatabase } from "../packages/db/src/connection.ts";
import { migrations } from "../packages/db/src/migrations/index.ts";
import type { Database } from "../packages/db/src/schema.ts";
import { createScratchPostgres, testEnv } from "../packages/db/src/testing.ts";
import { flag, listFlag } from "./lib/args.ts";

const RUNS = flag("runs", 1_000_000);
const WRITERS = flag("writers", 8);
const MODES = listFlag("modes", ["postgres", "embedded"]);
const BEFORE = "20261126090000_concurrency_held_slots";
const FLOW = "0194ab12-0000-4000-8000-000000000001";

/** Fills the schema as it was before partitioning with RUNS runs over the last 30 days, in batches of 100,000. */
async function fill(db: Kysely<Database>): Promise<void> {
  await sql`insert into accounts (id, name, display_name, root_email) values ('a1', 'a', 'A', 'a@x.io')`.execute(db);
  await sql`
    insert into flows (id, account_id, name, description, active, trigger, webhook_id, revision)
    values (${FLOW}::uuid, 'a1', 'f', '', true, '{"type":"webhook"}', 'wh1', 1)`.execute(db);
  const start = Date.now() - 30 * 86_400_000;
  const step = Math.floor((30 * 86_400_000) / RUNS);
  for (let from = 0; from < RUNS; from += 100_000) {
    const to = Math.min(RUNS, from + 100_000);
    await sql`
      insert into runs (id, account_id, flow_id, revision, status, trigger, delivery_id, started_at, finished_at)
      select (lpad(to_hex(${start}::bigint + g::bigint * ${step}), 12, '0') || '7' || substr(md5(g::text), 1, 3) || '8'
          || substr(md5(g::text), 4, 15))::uuid,
        'a1', ${FLOW}::uuid, 1, 'succeeded', jsonb_build_object('n', g, 'event', 'order.created'),
        case when g % 20 = 0 then 'evt_' || g end, now(), now()
      from generate_series(${from}::int, ${to - 1}::int) g`.execute(db);
  }
  await sql`
    insert into run_steps (run_id, name, record, output)
    select id, s, '{"status":"succeeded","attempts":[]}', '{"ok":true}' from runs, unnest(array['fetch', 'notify']) s`.execute(
    db,
  );
  await sql`analyze`.execute(db);
}

/** Writers doing what the platform does to a run, each write timed, until stopped. */
function startWriters(db: Kysely<Database>) {
  const latencies: { at: number; ms: number }[] = [];
  const errors: string[] = [];
  let running = true;
  const one = async () => {
    while (running) {
      const id = Bun.randomUUIDv7();
      for (const write of [
        sql`insert into runs (id, account_id, flow_id, revision, status, trigger) values (${id}::uuid, 'a1', ${FLOW}::uuid, 1, 'queued', '{}')`,
        sql`insert into run_steps (run_id, name, record) values (${id}::uuid, 'fetch', '{}')`,
        sql`update runs set status = 'succeeded', finished_at = now() where id = ${id}::uuid`,
      ]) {
        const began = performance.now();
        try {
          await write.execute(db);
        } catch (error) {
          errors.push(error instanceof Error ? error.message : String(error));
        }
        latencies.push({ at: began, ms: performance.now() - began });
      }
    }
  };
  const all = Array.from({ length: WRITERS }, one);
  return {
    latencies,
    errors,
    async stop() {
      running = false;
      await Promise.all(all);
    },
  };
}

const ms = (value: number) => `${value.toFixed(value < 10 ? 2 : 0)} ms`;

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0;
}

/** Runs the pending migrations one at a time, returning each one's name, start and duration. */
async function migrateTimed(db: Kysely<Database>) {
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } });
  const steps: { name: string; at: number; ms: number }[] = [];
  for (;;) {
    const at = performance.now();
    const { error, results } = await migrator.migrateUp();
    if (error) throw error;
    const name = results?.[0]?.migrationName;
    if (!name) return steps;
    steps.push({ name, at, ms: performance.now() - at });
  }
}

async function prepare(db: Kysely<Database>, label: string) {
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } });
  const before = await migrator.migrateTo(BEFORE);
  if (before.error) throw before.error;
  const began = performance.now();
  await fill(db);
  console.log(
    `${label}: ${RUNS.toLocaleString("en")} runs and their steps written in ${ms(performance.now() - began)}`,
  );
}

async function onPostgres(): Promise<void> {
  const scratch = await createScratchPostgres();
  const handle = await openDatabase({ kind: "postgres", url: scratch.url, poolSize: WRITERS + 2 });
  try {
    await prepare(handle.db, "postgres");
    const size = await sql<{ runs: string; steps: string }>`
      select pg_size_pretty(pg_total_relation_size('runs')) as runs,
        pg_size_pretty(pg_total_relation_size('run_steps')) as steps`.execute(handle.db);
    console.log(`  runs take ${size.rows[0]?.runs}, their steps ${size.rows[0]?.steps}`);
    const writers = startWriters(handle.db);
    await Bun.sleep(5000);
    const migrating = performance.now();
    const steps = await migrateTimed(handle.db);
    const migrated = performance.now();
    await Bun.sleep(5000);
    await writers.stop();
    const baseline = writers.latencies.filter((l) => l.at < migrating).map((l) => l.ms);
    const after = writers.latencies.filter((l) => l.at > migrated).map((l) => l.ms);
    console.log(
      `  ${WRITERS} writers, before: ${baseline.length} writes, p99 ${ms(percentile(baseline, 0.99))}, longest ${ms(Math.max(...baseline))}`,
    );
    for (const step of steps) {
      const during = writers.latencies.filter((l) => l.at + l.ms >= step.at && l.at <= step.at + step.ms);
      const longest = Math.max(0, ...during.map((l) => l.ms));
      console.log(`  ${step.name}: ${ms(step.ms)}, longest write meanwhile ${ms(longest)} (${during.length} writes)`);
    }
    console.log(
      `  after: ${after.length} writes, p99 ${ms(percentile(after, 0.99))}, longest ${ms(Math.max(...after))}; writes refused throughout: ${writers.errors.length}${writers.errors[0] ? ` (first: ${writers.errors[0]})` : ""}`,
    );
  } finally {
    await handle.close();
    await scratch.drop();
  }
}

async function embedded(): Promise<void> {
  const handle = await openDatabase({ kind: "pglite" });
  try {
    await prepare(handle.db, "embedded (PGlite)");
    for (const step of await migrateTimed(handle.db)) console.log(`  ${step.name}: ${ms(step.ms)}`);
  } finally {
    await handle.close();
  }
}

if (MODES.includes("postgres")) {
  if (testEnv.DATABASE_URL) await onPostgres();
  else console.log("postgres: skipped, DATABASE_URL is not set");
}
if (MODES.includes("embedded")) await embedded();
process.exit(0);
