import { messageOf } from "../errors.ts";
import type { Logger } from "../logger.ts";

/**
 * Hands a message to every handler of a channel. One failing handler must not keep the
 * message from the others, nor throw into the driver that delivered it.
 */
export function deliverToEach(
  handlers: Iterable<(message: string) => void>,
  message: string,
  logger: Logger | undefined,
): void {
  for (const handler of handlers) {
    try {
      handler(message);
    } catch (error) {
      logger?.warn({ err: messageOf(error) }, "notification handler failed");
    }
  }
}
