import type { Database, DatabaseHandle } from "@platform/db";
import { type Kysely, sql } from "kysely";
import { guarded } from "./failures.ts";
import { topicOf } from "./wakeups.ts";

/** The NOTIFY channel appends announce themselves on (payload: the stream's topic). */
export const APPENDS_CHANNEL = "broker_stream_appended";

interface Waiting {
  payload: string;
  resolve(id: string): void;
  reject(error: unknown): void;
}

interface StreamQueue {
  scope: string;
  stream: string;
  waiting: Waiting[];
  flushing: boolean;
}

/** Most entries written by one statement. */
const MAX_BATCH = 1000;

/**
 * Group commit for appends. Appends to one stream are serialized by its row lock
 * anyway, so concurrent appends to the same stream in this process wait for the
 * statement in flight and then go together: one statement, one commit, one NOTIFY.
 * Each caller still gets its own id, in call order, and only once it is committed.
 * The first statement goes at the end of the current turn of the event loop, so the
 * appends made together (a batch of runs queued at once) share it too.
 */
export class AppendBatches {
  private readonly queues = new Map<string, StreamQueue>();

  constructor(private readonly handle: DatabaseHandle) {}

  append(scope: string, stream: string, payload: string): Promise<string> {
    const topic = topicOf(scope, stream);
    let queue = this.queues.get(topic);
    if (!queue) {
      queue = { scope, stream, waiting: [], flushing: false };
      this.queues.set(topic, queue);
    }
    const appended = new Promise<string>((resolve, reject) => queue.waiting.push({ payload, resolve, reject }));
    if (!queue.flushing) {
      queue.flushing = true;
      const flushing = queue;
      setImmediate(() => void this.flush(topic, flushing));
    }
    return appended;
  }

  private async flush(topic: string, queue: StreamQueue): Promise<void> {
    while (queue.waiting.length > 0) {
      const batch = queue.waiting.splice(0, MAX_BATCH);
      try {
        const ids = await this.write(
          queue.scope,
          queue.stream,
          topic,
          batch.map((w) => w.payload),
        );
        for (const [i, waiting] of batch.entries()) waiting.resolve(ids[i] as string);
      } catch (error) {
        for (const waiting of batch) waiting.reject(error);
      }
    }
    queue.flushing = false;
    this.queues.delete(topic);
  }

  private async write(scope: string, stream: string, topic: string, payloads: string[]): Promise<string[]> {
    return guarded(() => insertEntries(this.handle.db, scope, stream, topic, payloads));
  }
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
