import { type Kysely, sql } from "kysely";

/**
 * The functions on a run's way whose generic plans a session keeps plan without sequential
 * scans, hash joins or merge joins, whatever the statistics say. A generic plan is made at
 * a session's first call from the statistics the day partitions of `runs` and `run_steps`
 * have then, and kept until an ANALYZE of one of them: the partitions ahead are empty, and
 * today's may not be analyzed yet, so a plan made then scans the partition whole or hashes
 * it (seen: `slot_take` hashed today's partition, and `throttle_take`'s check for a run's
 * steps scanned every partition of `run_steps`, at each call), and keeps doing so once the
 * partition holds the day's runs. Each of these functions reads and writes a few runs and
 * steps a call, each found by an index: with the other plans off, they keep finding them so.
 */
const FUNCTIONS = [
  "slot_take(jsonb, text[], integer)",
  "slot_hand_over(jsonb, interval)",
  "slot_hand_free(text, uuid, text, integer, interval)",
  "throttle_take(jsonb, text)",
  "rate_limit_judge(jsonb)",
  "singleton_judge(jsonb)",
  "debounce_judge(jsonb, text)",
  "batch_judge(jsonb, integer, text)",
  "batch_close(uuid)",
  "runs_page(text, uuid, text, uuid, uuid, timestamptz, uuid, timestamptz, integer)",
];
const SETTINGS = ["enable_seqscan", "enable_hashjoin", "enable_mergejoin"];

export async function up(db: Kysely<any>): Promise<void> {
  for (const fn of FUNCTIONS)
    for (const setting of SETTINGS) await sql`alter function ${sql.raw(fn)} set ${sql.raw(setting)} = off`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const fn of FUNCTIONS)
    for (const setting of SETTINGS) await sql`alter function ${sql.raw(fn)} reset ${sql.raw(setting)}`.execute(db);
}
