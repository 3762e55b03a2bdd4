import type { KvPrevious } from "../../broker/port.ts";
import { DomainError } from "../../errors.ts";
import { quotaError } from "../../limits/account-limits.ts";
import { unixSeconds } from "../../time.ts";
import type { StorageDeps } from "../deps.ts";
import { boundedJson } from "../limits.ts";
import { findBucket } from "./buckets.ts";

/**
 * Keys of a bucket, in the Broker under the account's scope and the bucket's id.
 *
 * `kv.keys` counts the account's keys that have no TTL: a key written with `ttl_s` leaves
 * by itself, when nothing would be there to take it off the count, so it is never on it.
 * Writing over a key moves it on or off the count as its new value has a TTL or not.
 */

/** The response header that names the key's current revision on a 409 (0: the key is absent). */
export const CURRENT_REVISION_HEADER = "x-current-revision";

const keyNotFound = () => new DomainError("not_found", "key not found");

/** How a write or delete moves `kv.keys`: +1 for a key without TTL that was not there before, and so on. */
const counted = (entry: KvPrevious | null) => (entry && !entry.expiring ? 1 : 0);

export interface PutKeyInput {
  value: unknown;
  /** Seconds until the key expires; no expiry when absent. */
  ttl_s?: number;
  /** Compare-and-set: write only when the key is at this revision (0: only when absent). */
  revision?: number;
}

/** Writes a key of an existing bucket; returns the new revision. 409 `conflict` when `revision` does not match. */
export async function putKey(
  deps: StorageDeps,
  accountId: string,
  bucketName: string,
  key: string,
  input: PutKeyInput,
): Promise<number> {
  const value = boundedJson("value", input.value);
  const [bucket, { plan, limits }] = await Promise.all([
    findBucket(deps, accountId, bucketName),
    deps.limits.of(accountId),
  ]);
  const options = { ttlSeconds: input.ttl_s, maxBytes: limits.kv_bytes };
  const written = { expiring: input.ttl_s !== undefined };
  const refused = (error: unknown) => {
    throw quotaError(error, "kv_bytes", plan);
  };
  if (input.revision === undefined) {
    const { revision, previous } = await deps.broker.kvPut(accountId, bucket.id, key, value, options).catch(refused);
    deps.metrics.count(accountId, "kv.keys", counted(written) - counted(previous));
    return revision;
  }
  const result = await deps.broker
    .kvCompareAndSet(accountId, bucket.id, key, value, input.revision, options)
    .catch(refused);
  if (!result.ok) {
    throw new DomainError("conflict", `the key is at revision ${result.revision}, not ${input.revision}`, {
      headers: { [CURRENT_REVISION_HEADER]: String(result.revision) },
    });
  }
  deps.metrics.count(accountId, "kv.keys", counted(written) - counted(result.previous));
  return result.revision;
}

export interface KeyView {
  key: string;
  value: unknown;
  revision: number;
  /** Unix seconds. */
  modified: number;
}

export async function getKey(deps: StorageDeps, accountId: string, bucketName: string, key: string): Promise<KeyView> {
  const bucket = await findBucket(deps, accountId, bucketName);
  const entry = await deps.broker.kvGet(accountId, bucket.id, key);
  if (!entry) throw keyNotFound();
  return { key, value: JSON.parse(entry.value), revision: entry.revision, modified: unixSeconds(entry.modified) };
}

export async function deleteKey(deps: StorageDeps, accountId: string, bucketName: string, key: string): Promise<void> {
  const bucket = await findBucket(deps, accountId, bucketName);
  const removed = await deps.broker.kvDelete(accountId, bucket.id, key);
  if (!removed) throw keyNotFound();
  deps.metrics.count(accountId, "kv.keys", -counted(removed));
}

export interface ListKeysQuery {
  prefix?: string;
  cursor?: string;
  limit?: number;
}

/** Live keys in byte order, paged; `next` is the cursor of the following page, null on the last. */
export async function listKeys(
  deps: StorageDeps,
  accountId: string,
  bucketName: string,
  query: ListKeysQuery,
): Promise<{ data: string[]; next: string | null }> {
  const bucket = await findBucket(deps, accountId, bucketName);
  const page = await deps.broker.kvKeys(accountId, bucket.id, {
    prefix: query.prefix || undefined,
    cursor: query.cursor,
    limit: query.limit,
  });
  return { data: page.keys, next: page.next };
}
