import type { StorageKvBucketsTable } from "@platform/db";
import { type Selectable, sql } from "kysely";
import { DomainError } from "../../errors.ts";
import type { StorageDeps } from "../deps.ts";

export type BucketDefinition = Selectable<StorageKvBucketsTable>;

export const bucketNotFound = () => new DomainError("not_found", "bucket not found");

/** Creates the bucket or updates its description. */
export async function putBucket(deps: StorageDeps, accountId: string, name: string, description: string) {
  await deps.db
    .insertInto("storage_kv_buckets")
    .values({ account_id: accountId, name, id: Bun.randomUUIDv7(), description })
    .onConflict((oc) => oc.columns(["account_id", "name"]).doUpdateSet({ description, modified_at: sql`now()` }))
    .execute();
  await deps.storageDefinitions.changed("bucket", accountId, name);
}

/** The bucket's definition; `not_found` when the account has no bucket of that name. */
export async function findBucket(deps: StorageDeps, accountId: string, name: string): Promise<BucketDefinition> {
  const row = await deps.storageDefinitions.get("bucket", accountId, name, () =>
    deps.db
      .selectFrom("storage_kv_buckets")
      .selectAll()
      .where("account_id", "=", accountId)
      .where("name", "=", name)
      .executeTakeFirst(),
  );
  if (!row) throw bucketNotFound();
  return row;
}

/** Deletes the bucket with its keys (taking them off `kv.keys`); `not_found` when there is none. */
export async function deleteBucket(deps: StorageDeps, accountId: string, name: string): Promise<void> {
  const row = await deps.db
    .deleteFrom("storage_kv_buckets")
    .where("account_id", "=", accountId)
    .where("name", "=", name)
    .returning("id")
    .executeTakeFirst();
  if (!row) throw bucketNotFound();
  await deps.storageDefinitions.changed("bucket", accountId, name);
  const removed = await deps.broker.kvDeleteBucket(accountId, row.id);
  deps.metrics.count(accountId, "kv.keys", -(removed.keys - removed.expiring));
}
