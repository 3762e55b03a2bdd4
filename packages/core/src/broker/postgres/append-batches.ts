import type { Database, DatabaseHandle } from "@platform/db";
import { type Kysely, sql } from "kysely";
import { keyedGroupCommit, ONE_STATEMENT_AT_A_TIME } from "../../group-commit.ts";
import { guarded } from "./failures.ts";
import { topicOf } from "./wakeups.ts";

/** The NOTIFY channel appends announce themselves on (payload: the stream's topic). */
export const APPENDS_CHANNEL = "broker_stream_appended";

/** Most entries written by one statement. */
const MAX_BATCH = 1000;

interface Append {
  scope: string;
  stream: string;
  payload: string;
}

/**
 * Group commit for appends, per stream (`keyedGroupCommit`). Appends to one stream are
 * serialized by its row lock anyway, so concurrent appends to the same stream in this process
 * wait for the statement in flight and then go together: one statement, one commit, one
 * NOTIFY. Each caller still gets its own id, in call order, and only once it is committed; a
 * stream's entries commit in id order, as its statements go one at a time. The first
 * statement goes at the end of the current turn of the event loop, so the appends made
 * together (a batch of runs queued at once) share it too. The answer: `append(scope, stream,
 * payload)`, the entry's id.
 */
export function appendBatches(
  handle: DatabaseHandle,
): (scope: string, stream: string, payload: string) => Promise<string> {
  const append = keyedGroupCommit<Append, string>(
    ({ scope, stream }) => topicOf(scope, stream),
    (appends, topic) => {
      const { scope, stream } = appends[0] as Append;
      const payloads = appends.map((a) => a.payload);
      return guarded(() => insertEntries(handle.db, scope, stream, topic, payloads));
    },
    { maxBatch: MAX_BATCH, maxInFlight: ONE_STATEMENT_AT_A_TIME },
  );
  return (scope, stream, payload) => append({ scope, stream, payload });
}

/**
 * Numbers entries from the stream row (locked until commit), inserts them and announces them,
 * in one statement; the ids in order. `executor` is the database or a transaction.
 */
export async function insertEntries(
  executor: Kysely<Database>,
  scope: string,
  stream: string,
  topic: string,
  payloads: string[],
): Promise<string[]> {
  const count = payloads.length;
  const result = await sql<{ id: number }>`
    with next as (
      insert into broker_streams as s (scope, stream, last_id) values (${scope}, ${stream}, ${count})
      on conflict (scope, stream) do update set last_id = s.last_id + ${count}
      returning last_id
    ), entries as (
      insert into broker_stream_entries (scope, stream, id, payload, created_at)
      select ${scope}, ${stream}, next.last_id - ${count} + p.ordinality, p.payload, clock_timestamp()
      from next, jsonb_array_elements_text(${JSON.stringify(payloads)}::jsonb) with ordinality as p(payload, ordinality)
      returning id
    ), notified as (
      select pg_notify(${APPENDS_CHANNEL}, ${topic})
    )
    select id from entries, notified order by id`.execute(executor);
  if (result.rows.length !== count) throw new Error(`append wrote ${result.rows.length} of ${count} entries`);
  return result.rows.map((row) => String(row.id));
}
