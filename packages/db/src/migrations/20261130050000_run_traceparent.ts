import { type Kysely, sql } from "kysely";

/**
 * A run's `traceparent`: the W3C trace context of the span that accepted it, when the process
 * that accepted it traces (OpenTelemetry). The worker's spans of the run continue that trace,
 * however many deliveries the run takes; null for a run accepted without tracing. Nullable
 * without a default, so adding it rewrites no partition.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table runs add column traceparent text`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table runs drop column traceparent`.execute(db);
}
