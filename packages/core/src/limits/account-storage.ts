import type { Database } from "@platform/db";
import { type Kysely, type RawBuilder, sql } from "kysely";
import type { DomainError } from "../errors.ts";
import { bytesQuotaError } from "./account-limits.ts";
import type { LimitName } from "./plans.ts";

/**
 * What an account keeps in the database against its plan's byte limits: one row per account
 * (`account_storage`), moved by the statement that writes or deletes what it counts, so that a
 * write is checked without summing a table, and two writes at once cannot both pass the limit
 * (the row's lock takes them one after the other).
 */
export type StoredBytes = Extract<LimitName, "event_bytes" | "flow_revision_bytes">;

/**
 * A statement for a CTE: adds `bytes` to the account's `column` if the sum stays within
 * `limit`, and then answers one row (`counted`); none when the write does not fit, and then
 * nothing is added. The statement that writes the row it counts reads from it, so that
 * the row is written only if it was counted.
 */
export function countWithin(accountId: string, column: StoredBytes, bytes: number, limit: number): RawBuilder<unknown> {
  const kept = sql.ref(`s.${column}`);
  return sql`
    insert into account_storage as s (account_id, ${sql.ref(column)})
    select ${accountId}, ${bytes}::bigint where ${bytes}::bigint <= ${limit}::bigint
    on conflict (account_id) do update set ${sql.ref(column)} = ${kept} + excluded.${sql.ref(column)}
    where ${kept} + excluded.${sql.ref(column)} <= ${limit}::bigint
    returning 1 as counted`;
}

/** The bytes the account keeps of each (0 before its first write). */
export async function accountStorage(db: Kysely<Database>, accountId: string): Promise<Record<StoredBytes, number>> {
  const row = await db
    .selectFrom("account_storage")
    .select(["event_bytes", "flow_revision_bytes"])
    .where("account_id", "=", accountId)
    .executeTakeFirst();
  return { event_bytes: Number(row?.event_bytes ?? 0), flow_revision_bytes: Number(row?.flow_revision_bytes ?? 0) };
}

/** The 413 of a write that `countWithin` did not count: what the account keeps now, and the limit it would pass. */
export async function storageRefusal(
  db: Kysely<Database>,
  accountId: string,
  column: StoredBytes,
  quota: { limit: number; plan: string },
): Promise<DomainError> {
  const used = (await accountStorage(db, accountId))[column];
  return bytesQuotaError(column, { ...quota, used });
}
