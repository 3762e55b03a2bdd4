import { createHash } from "node:crypto";

/**
 * Keys that tenants choose, or that their senders' data chooses for them (a flow's
 * `concurrency` or `throttle` key taken from trigger data, a webhook's delivery id), are
 * kept in columns under a btree index, and a btree entry holds at most 2,704 bytes:
 * PostgreSQL refuses a longer one on every write, whatever the table. Every such key is
 * stored through `indexedKey`, so a key of any length or content works:
 *
 * - a key of at most MAX_INDEXED_KEY_LENGTH characters (at most 600 bytes of UTF-8) that
 *   PostgreSQL's text can hold is kept as it is, readable wherever it shows;
 * - any other (a longer one, or one with a NUL character) is kept as `sha256:<hex>` of its
 *   UTF-8: 71 characters, as distinct as the keys are.
 *
 * Keys that a schema bounds where they enter (event keys: 200 characters) need none of it.
 */
export const MAX_INDEXED_KEY_LENGTH = 200;

export function indexedKey(key: string): string {
  if (key.length <= MAX_INDEXED_KEY_LENGTH && !key.includes("\u0000")) return key;
  return `sha256:${createHash("sha256").update(key).digest("hex")}`;
}
