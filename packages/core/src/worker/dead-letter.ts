import type { Broker, DeliveredEntry } from "../broker/port.ts";
import { type ConsumerDefinition, type Queue, scopeOf } from "./catalog.ts";

/** Dead letters kept per consumer; older ones are trimmed away. */
const KEEP_DEAD_LETTERS = 10_000;

/** What the dead-letter stream of a consumer holds for each entry it gave up on. */
export interface DeadLetter {
  consumer: string;
  stream: string;
  entryId: string;
  /** The entry's payload as it was appended. */
  payload: string;
  error: string;
  deliveries: number;
  failedAt: string;
}

export const deadLetterStream = (definition: ConsumerDefinition) => `dead-letter.${definition.name}`;
export const deadLetterCounter = (definition: ConsumerDefinition) => `worker.dead_letters.${definition.name}`;

/**
 * Moves an entry out of the way: appends it with the error to the consumer's
 * dead-letter stream (one per consumer, in its scope, whichever of its streams the entry
 * came from), counts it, then acknowledges it on `from`, so it never blocks that stream.
 */
export async function deadLetter(
  broker: Broker,
  definition: ConsumerDefinition,
  entry: DeliveredEntry,
  error: string,
  from: Queue,
): Promise<void> {
  const scope = scopeOf(definition);
  const letter: DeadLetter = {
    consumer: definition.name,
    stream: from.scope === scope ? from.stream : `${from.scope}/${from.stream}`,
    entryId: entry.id,
    payload: entry.payload,
    error,
    deliveries: entry.deliveries,
    failedAt: new Date().toISOString(),
  };
  await broker.append(scope, deadLetterStream(definition), JSON.stringify(letter));
  await broker.increment(scope, deadLetterCounter(definition));
  await broker.ack(from.scope, from.stream, definition.name, [entry.id]);
  await broker.trim(scope, deadLetterStream(definition), { maxLength: KEEP_DEAD_LETTERS });
}

/** The dead letters of a consumer, oldest first. */
export async function readDeadLetters(
  broker: Broker,
  definition: ConsumerDefinition,
  options: { after?: string; limit?: number } = {},
): Promise<(DeadLetter & { id: string })[]> {
  const entries = await broker.readRange(scopeOf(definition), deadLetterStream(definition), options);
  return entries.map((entry) => ({ id: entry.id, ...(JSON.parse(entry.payload) as DeadLetter) }));
}
