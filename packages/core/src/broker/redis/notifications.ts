import type { Logger } from "../../logger.ts";
import { assertNames, assertNotificationSize } from "../arguments.ts";
import { deliverToEach } from "../deliver.ts";
import type { NotificationPort, Unsubscribe } from "../port.ts";
import type { RedisClient } from "./client.ts";
import { connectRedisClient, createRedisClient, guarded } from "./client.ts";
import { channelName } from "./keys.ts";

interface Subscription {
  handlers: Set<(message: string) => void>;
  /** Settles when Redis has confirmed the SUBSCRIBE. */
  active: Promise<unknown>;
}

/**
 * Pub/sub. Publishing uses the shared connection; subscriptions share one dedicated
 * connection (a subscribed connection can do nothing else), opened on first use and
 * resubscribed by ioredis after a reconnect.
 */
export class RedisNotifications implements NotificationPort {
  private subscriber: RedisClient | undefined;
  private readonly subscriptions = new Map<string, Subscription>();

  constructor(
    private readonly client: RedisClient,
    private readonly url: string,
    private readonly logger?: Logger,
  ) {}

  async publish(scope: string, channel: string, message: string): Promise<void> {
    assertNames({ scope, channel });
    assertNotificationSize(message);
    await guarded(() => this.client.publish(channelName(scope, channel), message));
  }

  async subscribe(scope: string, channel: string, onMessage: (message: string) => void): Promise<Unsubscribe> {
    assertNames({ scope, channel });
    const name = channelName(scope, channel);
    const subscriber = await this.connection();
    let subscription = this.subscriptions.get(name);
    if (!subscription) {
      subscription = { handlers: new Set(), active: guarded(() => subscriber.subscribe(name)) };
      this.subscriptions.set(name, subscription);
    }
    subscription.handlers.add(onMessage);
    const unsubscribe = async () => {
      const current = this.subscriptions.get(name);
      if (!current?.handlers.delete(onMessage) || current.handlers.size > 0) return;
      this.subscriptions.delete(name);
      await subscriber.unsubscribe(name).catch(() => {});
    };
    try {
      await subscription.active;
    } catch (error) {
      await unsubscribe();
      throw error;
    }
    return unsubscribe;
  }

  close(): void {
    this.subscriptions.clear();
    this.subscriber?.disconnect();
    this.subscriber = undefined;
  }

  private async connection(): Promise<RedisClient> {
    if (!this.subscriber) {
      const subscriber = createRedisClient(this.url, { name: "broker-subscriber", logger: this.logger });
      subscriber.on("message", (channel: string, message: string) => {
        deliverToEach(this.subscriptions.get(channel)?.handlers ?? [], message, this.logger);
      });
      this.subscriber = subscriber;
    }
    await connectRedisClient(this.subscriber);
    return this.subscriber;
  }
}
