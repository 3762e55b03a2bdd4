import type { Logger } from "../../logger.ts";
import type { RedisClient } from "./client.ts";
import { connectRedisClient, createRedisClient } from "./client.ts";

/**
 * Connections for blocking reads. A blocked XREADGROUP occupies its connection, so
 * each concurrent blocking reader borrows one of its own; idle ones are kept for reuse.
 */
export class BlockingClientPool {
  private readonly idle: RedisClient[] = [];
  private readonly all = new Set<RedisClient>();
  private closed = false;

  constructor(
    private readonly url: string,
    private readonly logger?: Logger,
  ) {}

  async use<T>(work: (client: RedisClient) => Promise<T>): Promise<T> {
    const client = await this.acquire();
    try {
      return await work(client);
    } finally {
      this.giveBack(client);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const clients = [...this.all];
    this.all.clear();
    this.idle.length = 0;
    for (const client of clients) client.disconnect();
  }

  private async acquire(): Promise<RedisClient> {
    while (this.idle.length > 0) {
      const client = this.idle.pop() as RedisClient;
      if (client.status === "ready") return client;
      this.discard(client);
    }
    const client = createRedisClient(this.url, { name: "broker-blocking", logger: this.logger });
    this.all.add(client);
    try {
      await connectRedisClient(client);
    } catch (error) {
      this.discard(client);
      throw error;
    }
    return client;
  }

  private giveBack(client: RedisClient): void {
    if (this.closed || client.status !== "ready") this.discard(client);
    else this.idle.push(client);
  }

  private discard(client: RedisClient): void {
    this.all.delete(client);
    client.disconnect();
  }
}
