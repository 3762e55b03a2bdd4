import type { Logger } from "../../logger.ts";
import type { Broker } from "../port.ts";
import { BlockingClientPool } from "./blocking-pool.ts";
import { connectRedisClient, createRedisClient, guarded } from "./client.ts";
import { redisCounters } from "./counters.ts";
import { dataHolder } from "./data-holder.ts";
import { redisKv } from "./kv.ts";
import { RedisNotifications } from "./notifications.ts";
import { redisStreams } from "./streams.ts";

/**
 * The scale-out adapter. It connects at once; when Redis is not reachable yet it
 * still returns (every call rejects with `unavailable`, `ping` included) and keeps
 * reconnecting in the background, so a process can start before Redis and report
 * itself unready meanwhile.
 */
export async function createRedisBroker(url: string, logger?: Logger): Promise<Broker> {
  const client = createRedisClient(url, { name: "broker", logger, autoPipelining: true });
  const blocking = new BlockingClientPool(url, logger);
  const notifications = new RedisNotifications(client, url, logger);
  try {
    await connectRedisClient(client);
  } catch {
    logger?.warn("redis is not reachable yet; the broker answers `unavailable` until it is");
  }
  return {
    kind: "redis",
    ...redisStreams(client, blocking),
    ...redisKv(client),
    ...redisCounters(client),
    publish: (scope, channel, message) => notifications.publish(scope, channel, message),
    subscribe: (scope, channel, onMessage) => notifications.subscribe(scope, channel, onMessage),
    async ping() {
      await guarded(() => client.ping());
    },
    dataHolder: (scope) => dataHolder(client, scope),
    async close() {
      notifications.close();
      await blocking.close();
      client.disconnect();
    },
  };
}
