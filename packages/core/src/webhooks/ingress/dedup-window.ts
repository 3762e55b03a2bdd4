import { sql } from "kysely";
import type { Services } from "../../services.ts";
import type { PeriodicJob } from "../../worker/periodic.ts";

/** Delivery ids forgotten per statement. */
const PAGE = 1000;

/**
 * Forgets delivery ids whose flow's de-duplication window (`trigger.dedup_window_s`, 72 h
 * by default) is over, oldest first, a page per statement, so that the unique index keeps
 * only what can still be a repeat. A sender that delivers the same id after the window
 * starts a new run, as it would with Stripe's own retries over.
 */
export function deliveryWindowJob(services: Pick<Services, "db">, everyMs = 60_000): PeriodicJob {
  return {
    name: "webhook-delivery-window",
    everyMs,
    async run({ signal }) {
      while (!signal.aborted) {
        const { rows } = await sql<{ id: string }>`
          update runs set delivery_id = null
          where id in (
            select r.id from runs r join flows f on f.id = r.flow_id
            where r.delivery_id is not null
              and r.created_at < now() - make_interval(secs => coalesce((f.trigger->>'dedup_window_s')::int, 259200))
            order by r.created_at
            limit ${PAGE})
          returning id`.execute(services.db);
        if (rows.length < PAGE) return;
      }
    },
  };
}
