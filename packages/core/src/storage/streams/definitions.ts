import type { StorageStreamsTable } from "@platform/db";
import { type Selectable, sql } from "kysely";
import type { TrimOptions } from "../../broker/port.ts";
import { DomainError } from "../../errors.ts";
import type { StorageDeps } from "../deps.ts";

export type StreamDefinition = Selectable<StorageStreamsTable>;

export interface StreamSettings {
  description: string;
  max_messages: number | null;
  max_age_s: number | null;
}

export const streamNotFound = () => new DomainError("not_found", "stream not found");

/** The Broker's trim limits for a stream's retention, or undefined when it keeps everything. */
export function retentionOf(stream: StreamSettings): TrimOptions | undefined {
  if (stream.max_messages === null && stream.max_age_s === null) return undefined;
  return {
    maxLength: stream.max_messages ?? undefined,
    maxAgeMs: stream.max_age_s === null ? undefined : stream.max_age_s * 1000,
  };
}

/**
 * Creates the stream or replaces its settings (a setting left out is no limit), and
 * applies the retention at once: lowering a limit drops what it no longer allows.
 */
export async function putStream(
  deps: StorageDeps,
  accountId: string,
  name: string,
  settings: StreamSettings,
): Promise<void> {
  const { plan, limits } = await deps.limits.of(accountId);
  if (settings.max_messages !== null && settings.max_messages > limits.stream_messages) {
    throw new DomainError(
      "conflict",
      `max_messages may be at most ${limits.stream_messages.toLocaleString("en")} on the ${plan} plan (stream_messages)`,
      { details: { limit: { name: "stream_messages", limit: limits.stream_messages, plan } } },
    );
  }
  const row = await deps.db
    .insertInto("storage_streams")
    .values({ account_id: accountId, name, id: Bun.randomUUIDv7(), ...settings })
    .onConflict((oc) => oc.columns(["account_id", "name"]).doUpdateSet({ ...settings, modified_at: sql`now()` }))
    .returning("id")
    .executeTakeFirstOrThrow();
  await deps.storageDefinitions.changed("stream", accountId, name);
  const retention = retentionOf(settings);
  if (retention) await deps.broker.trim(accountId, row.id, retention);
}

/** The stream's definition; `not_found` when the account has no stream of that name. */
export async function findStream(deps: StorageDeps, accountId: string, name: string): Promise<StreamDefinition> {
  const row = await deps.storageDefinitions.get("stream", accountId, name, () =>
    deps.db
      .selectFrom("storage_streams")
      .selectAll()
      .where("account_id", "=", accountId)
      .where("name", "=", name)
      .executeTakeFirst(),
  );
  if (!row) throw streamNotFound();
  return row;
}

/** Deletes the stream and its messages; `not_found` when there is none. */
export async function deleteStream(deps: StorageDeps, accountId: string, name: string): Promise<void> {
  const row = await deps.db
    .deleteFrom("storage_streams")
    .where("account_id", "=", accountId)
    .where("name", "=", name)
    .returning("id")
    .executeTakeFirst();
  if (!row) throw streamNotFound();
  await deps.storageDefinitions.changed("stream", accountId, name);
  await deps.broker.deleteStream(accountId, row.id);
}
