import type { Database } from "@platform/db";
import { type Kysely, sql } from "kysely";
import type { AccountLimits } from "../limits/account-limits.ts";
import { countWithin, storageRefusal } from "../limits/account-storage.ts";

/**
 * Events for waiting runs: `POST /events` and `event.send` steps send one to an account by
 * key; a `wait.event` step takes the first of its key sent after it began waiting. A run
 * parked on waits lists their keys in `waiting_on` (see the run store), so an event wakes
 * exactly the runs waiting for its key, from an index, and the waker queues them.
 *
 * A run about to park may miss the wake of an event sent while it still held itself (the
 * wake looks at the parked row): after parking it looks again (`settleWaits`) and wakes
 * itself if what it waits for came meanwhile. Either the event was recorded before that
 * look, or its wake comes after the park is written; no event is lost.
 *
 * An event counts against its account's `event_bytes` (its key and its data as JSON, in bytes
 * of UTF-8) in the statement that records it, and an event that would pass the plan's limit
 * is refused (413 naming it); retention gives its bytes back (see housekeeping.ts).
 */
export interface RunEvents {
  /** Records the event and wakes the account's runs waiting on its key; answers how many it woke. 413 past `event_bytes`. */
  send(accountId: string, key: string, data: unknown): Promise<number>;
  /** The data of the first event of the key sent at or after `since` (ISO), or undefined. */
  first(accountId: string, key: string, since: string): Promise<{ data: unknown } | undefined>;
  /** Queues a parked run (one that waits) at once: its wait may be over. */
  wake(runId: string): Promise<void>;
}

/** Events are kept this long: a wait may last at most WAIT_EVENT_MAX_TIMEOUT_MS. */
export const EVENT_RETENTION_DAYS = 31;

/** The most and the default time a `wait.event` step waits, in ms. */
export const WAIT_EVENT_MAX_TIMEOUT_MS = 30 * 86_400_000;
export const WAIT_EVENT_DEFAULT_TIMEOUT_MS = 7 * 86_400_000;

export function createRunEvents(db: Kysely<Database>, limits: Pick<AccountLimits, "of">): RunEvents {
  return {
    async send(accountId, key, data) {
      const { plan, limits: planLimits } = await limits.of(accountId);
      const limit = planLimits.event_bytes;
      const json = JSON.stringify(data ?? null);
      const bytes = Buffer.byteLength(key) + Buffer.byteLength(json);
      // Recorded before the wake, in its own statement: a run parking meanwhile finds it (see above).
      const recorded = await sql`
        with counted as (${countWithin(accountId, "event_bytes", bytes, limit)})
        insert into run_events (account_id, key, data, bytes)
        select ${accountId}, ${key}, ${json}::jsonb, ${bytes} from counted
        returning id`.execute(db);
      if (recorded.rows.length === 0) throw await storageRefusal(db, accountId, "event_bytes", { limit, plan });
      const { rows } = await sql<{ id: string }>`
        update runs set wake_at = now()
        where account_id = ${accountId} and waiting_on @> array[${key}]::text[] and status = 'running'
        returning id`.execute(db);
      return rows.length;
    },
    async first(accountId, key, since) {
      const row = await db
        .selectFrom("run_events")
        .select("data")
        .where("account_id", "=", accountId)
        .where("key", "=", key)
        .where("created_at", ">=", new Date(since))
        .orderBy("created_at")
        .orderBy("id")
        .limit(1)
        .executeTakeFirst();
      return row ? { data: row.data } : undefined;
    },
    async wake(runId) {
      await sql`update runs set wake_at = now() where id = ${runId} and status = 'running'`.execute(db);
    },
  };
}
