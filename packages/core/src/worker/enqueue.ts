import type { z } from "zod";
import type { Broker } from "../broker/port.ts";
import { PLATFORM_SCOPE } from "../broker/port.ts";
import { DomainError } from "../errors.ts";
import type { ConsumerDefinition } from "./catalog.ts";

export const scopeOf = (definition: ConsumerDefinition) => definition.scope ?? PLATFORM_SCOPE;

/** Validates a payload against a consumer's schema and appends it to the consumer's stream; returns the entry id. */
export async function enqueue<Schema extends z.ZodType>(
  broker: Broker,
  definition: ConsumerDefinition<Schema>,
  payload: z.input<Schema>,
): Promise<string> {
  const checked = definition.schema.safeParse(payload);
  if (!checked.success) {
    throw new DomainError(
      "validation_error",
      `invalid ${definition.name} payload: ${checked.error.issues[0]?.message}`,
    );
  }
  return broker.append(scopeOf(definition), definition.stream, JSON.stringify(payload));
}
