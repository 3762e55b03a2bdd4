import type { DatabaseHandle } from "@platform/db";
import { assertNames, assertNotificationSize } from "../arguments.ts";
import type { NotificationPort } from "../port.ts";
import { guarded } from "./failures.ts";
import { type TopicListener, topicOf } from "./wakeups.ts";

/** The NOTIFY channel every broker notification travels on (payload: `<topic>:<message>`). */
export const NOTIFICATIONS_CHANNEL = "broker_notification";

/** Pub/sub over LISTEN/NOTIFY: one channel, fanned out per (scope, channel) topic in each process. */
export function postgresNotifications(handle: DatabaseHandle, listener: TopicListener): NotificationPort {
  return {
    async publish(scope, channel, message) {
      assertNames({ scope, channel });
      assertNotificationSize(message);
      await guarded(() => handle.notify(NOTIFICATIONS_CHANNEL, `${topicOf(scope, channel)}:${message}`));
    },

    async subscribe(scope, channel, onMessage) {
      assertNames({ scope, channel });
      await guarded(() => listener.start());
      const off = listener.on(topicOf(scope, channel), onMessage);
      return async () => off();
    },
  };
}
