import { type Kysely, sql } from "kysely";

/**
 * `runs.queue_reason` holds a code (`slot`, `slot_woken`, `throttle`), no longer the sentence
 * the API shows for it, which the run view now renders: rewording the sentence must not strand
 * the runs waiting with the old one. Only waiting runs have a reason, read from a partial index.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    update runs set queue_reason = case queue_reason
      when 'waiting for concurrency slot' then 'slot'
      when 'woken for a concurrency slot' then 'slot_woken'
      when 'waiting for throttle window' then 'throttle'
      else queue_reason end
    where queue_reason is not null`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    update runs set queue_reason = case queue_reason
      when 'slot' then 'waiting for concurrency slot'
      when 'slot_woken' then 'woken for a concurrency slot'
      when 'throttle' then 'waiting for throttle window'
      else queue_reason end
    where queue_reason is not null`.execute(db);
}
