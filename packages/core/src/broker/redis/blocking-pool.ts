import type { Redis } from "ioredis";
import type { Logger } from "../../logger.ts";
import { connectRedisClient, createRedisClient } from "./client.ts";

/**
 * Connections for blocking reads. A blocked XREADGROUP occupies its connection, so
 * each concurrent blocking reader borrows one of its own; idle ones are kept for reuse.
 */
export class BlockingClientPool {
  private readonly idle: Redis[] = [];
  private readonly all = new Set<Redis>();
  private closed = false;

  constructor(
    private readonly url: string,
    private readonly logger?: Logger,
  ) {}

  async use<T>(work: (client: Redis) => Promise<T>): Promise<T> {
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

  private async acquire(): Promise<Redis> {
    while (this.idle.length > 0) {
      const client = this.idle.pop() as Redis;
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

  private giveBack(client: Redis): void {
    if (this.closed || client.status !== "ready") this.discard(client);
    else this.idle.push(client);
  }

  private discard(client: Redis): void {
    this.all.delete(client);
    client.disconnect();
  }
}
