import type { DatabaseHandle } from "@platform/db";
import { sql } from "kysely";
import { messageOf } from "../../errors.ts";
import type { Logger } from "../../logger.ts";

const SWEEP_EVERY_MS = 60_000;

/** Deletes expired KV keys and idle rate-limit rows now and then; reads never depend on it. */
export function startSweeper(handle: DatabaseHandle, logger?: Logger): { stop(): void } {
  const sweep = async () => {
    try {
      await sql`delete from broker_kv where expires_at <= clock_timestamp()`.execute(handle.db);
      await sql`delete from broker_rate_limits where expires_at <= clock_timestamp()`.execute(handle.db);
      await sql`delete from broker_rate_limit_turns where expires_at <= clock_timestamp()`.execute(handle.db);
    } catch (error) {
      logger?.debug({ err: messageOf(error) }, "broker sweep failed");
    }
  };
  const timer = setInterval(sweep, SWEEP_EVERY_MS);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
