import { Cluster, Redis } from "ioredis";
import { DomainError } from "../../errors.ts";
import type { Logger } from "../../logger.ts";
import { parseRedisAddress } from "./address.ts";
import { fillTracingChannelGap } from "./tracing-gap.ts";

fillTracingChannelGap();

/** A connection to the broker's Redis: one server, or a Redis Cluster (which routes each command by its key's slot). */
export type RedisClient = Redis | Cluster;

export interface RedisClientOptions {
  name: string;
  logger?: Logger;
  /** Sends the commands issued in one tick in one write: much higher throughput for a shared connection. */
  autoPipelining?: boolean;
}

const reconnectDelay = (attempt: number) => Math.min(50 * 2 ** attempt, 2000);

/**
 * The one Redis client factory, for a `redis://` URL or a `redis+cluster://` one (see
 * address.ts). Clients reconnect by themselves (exponential backoff up to 2 s) and fail
 * fast while disconnected: no offline queue, no re-sending of commands that were in flight
 * when the connection dropped, so a call made while Redis is down rejects at once instead
 * of waiting for it to return. A cluster client follows MOVED redirections and, when a
 * node's connection closes (its primary failed), refreshes the slot map and retries for
 * up to 16 × 100 ms, the time a replica takes to be promoted with a short
 * `cluster-node-timeout`; after that the call rejects as `unavailable`.
 */
export function createRedisClient(url: string, options: RedisClientOptions): RedisClient {
  const address = parseRedisAddress(url);
  const connection = {
    connectionName: options.name,
    protocol: 2 as const,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    connectTimeout: 2000,
  };
  const client: RedisClient =
    address.kind === "single"
      ? new Redis(url, {
          ...connection,
          lazyConnect: true,
          enableAutoPipelining: options.autoPipelining ?? false,
          enableOfflineQueue: false,
          retryStrategy: reconnectDelay,
        })
      : new Cluster(address.nodes, {
          lazyConnect: true,
          enableAutoPipelining: options.autoPipelining ?? false,
          enableOfflineQueue: false,
          clusterRetryStrategy: reconnectDelay,
          retryDelayOnFailover: 100,
          retryDelayOnClusterDown: 100,
          maxRedirections: 16,
          slotsRefreshTimeout: 2000,
          redisOptions: {
            ...connection,
            username: address.username,
            password: address.password,
            tls: address.tls ? {} : undefined,
          },
        });
  let reported = false;
  // Without a listener ioredis prints "Unhandled error event" for every failed reconnect.
  client.on("error", (error: Error) => {
    if (reported) return;
    reported = true;
    options.logger?.warn({ err: error.message, connection: options.name }, "redis connection error");
  });
  client.on("ready", () => {
    if (reported) options.logger?.info({ connection: options.name }, "redis connection restored");
    reported = false;
  });
  return client;
}

/** Connects a lazily created client; rejects with `unavailable` when Redis cannot be reached. */
export async function connectRedisClient(client: RedisClient): Promise<void> {
  if (client.status === "ready") return;
  if (client.status === "wait" || client.status === "end") {
    await client.connect().catch((error: unknown) => {
      throw toBrokerError(error);
    });
    return;
  }
  // connecting or reconnecting: wait for the outcome of the attempt under way.
  await new Promise<void>((resolve, reject) => {
    const onReady = () => {
      cleanup();
      resolve();
    };
    const onFailure = () => {
      cleanup();
      reject(unavailable());
    };
    const cleanup = () => {
      client.off("ready", onReady);
      client.off("close", onFailure);
      client.off("end", onFailure);
    };
    client.once("ready", onReady);
    client.once("close", onFailure);
    client.once("end", onFailure);
  });
}

function unavailable(): DomainError {
  return new DomainError("unavailable", "the broker (Redis) is unavailable");
}

/**
 * Turns whatever ioredis rejected with into the broker's errors: a missing consumer
 * group becomes `not_found`, other replies from Redis stay as they are (a bug, not an
 * outage), and every connection-level failure becomes `unavailable`.
 */
export function toBrokerError(error: unknown): Error {
  if (error instanceof DomainError) return error;
  if (error instanceof Error && error.name === "ReplyError") {
    if (error.message.includes("NOGROUP")) return new DomainError("not_found", "the consumer group does not exist");
    if (/invalid stream id/i.test(error.message)) return new DomainError("validation_error", "not a stream entry id");
    return error;
  }
  return unavailable();
}

/** Runs one Redis call with the broker's error mapping. */
export async function guarded<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw toBrokerError(error);
  }
}
