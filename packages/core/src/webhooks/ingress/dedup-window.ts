import { sql } from "kysely";
import type { Services } from "../../services.ts";
import type { PeriodicJob } from "../../worker/periodic.ts";

/** Delivery ids forgotten per statement. */
const PAGE = 1000;

/**
 * Forgets delivery ids whose flow's de-duplication window (`trigger.dedup_window_s`, 72 h
 * by default) is over, oldest first, a page per statement, so that `run_deliveries` keeps
 * only what can still be a repeat. A sender that delivers the same id after the window
 * starts a new run, as it would with Stripe's own retries over. The run keeps its
 * `delivery_id` as the record of what started it.
 */
export function deliveryWindowJob(services: Pick<Services, "db">, everyMs = 60_000): PeriodicJob {
  return {
    name: "webhook-delivery-window",
    everyMs,
    async run({ signal }) {
      while (!signal.aborted) {
        const { rows } = await sql<{ run_id: string }>`
          delete from run_deliveries
          where (flow_id, delivery_id) in (
            select d.flow_id, d.delivery_id from run_deliveries d join flows f on f.id = d.flow_id
            where d.created_at < now() - make_interval(secs => coalesce((f.trigger->>'dedup_window_s')::int, 259200))
            order by d.created_at
            limit ${PAGE})
          returning run_id`.execute(services.db);
        if (rows.length < PAGE) return;
      }
    },
  };
}
