import type { DatabaseHandle } from "@platform/db";
import type { Logger } from "../../logger.ts";
import { assertName } from "../arguments.ts";
import type { Broker } from "../port.ts";
import { APPENDS_CHANNEL } from "./append-batches.ts";
import { postgresCounters } from "./counters.ts";
import { guarded } from "./failures.ts";
import { postgresKv } from "./kv.ts";
import { postgresLanes } from "./lanes.ts";
import { NOTIFICATIONS_CHANNEL, postgresNotifications } from "./notifications.ts";
import { createQuotaGate } from "./quotas.ts";
import { postgresStreams } from "./streams.ts";
import { startSweeper } from "./sweeper.ts";
import { TopicListener } from "./wakeups.ts";

/**
 * The embedded adapter, on PGlite or a PostgreSQL server without Redis. It uses the
 * caller's database handle and leaves it open on `close`.
 */
export function createPostgresBroker(database: DatabaseHandle, logger?: Logger): Broker {
  let closed = false;
  const appends = new TopicListener(database, APPENDS_CHANNEL, logger);
  const notifications = new TopicListener(database, NOTIFICATIONS_CHANNEL, logger);
  const sweeper = startSweeper(database, logger);
  const quotas = createQuotaGate(database);
  return {
    kind: "postgres",
    ...postgresStreams(database, appends, () => closed, quotas),
    ...postgresLanes(database),
    ...postgresKv(database, quotas),
    ...postgresCounters(database, quotas),
    ...postgresNotifications(database, notifications),
    async ping() {
      await guarded(() => database.ping());
    },
    async dataHolder(scope) {
      assertName("scope", scope);
      return "postgres";
    },
    async close() {
      closed = true;
      sweeper.stop();
      await appends.close();
      await notifications.close();
    },
  };
}
