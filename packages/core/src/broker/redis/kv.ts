import { assertInteger, assertName, assertNames, assertNonNegative } from "../arguments.ts";
import { type KvPort, type KvPrevious, type KvPutOptions, QuotaExceeded } from "../port.ts";
import type { RedisClient } from "./client.ts";
import { guarded } from "./client.ts";
import { bucketKeys, usageKey } from "./keys.ts";
import { KV_DELETE, KV_DELETE_BUCKET, KV_GET, KV_KEYS, KV_WRITE, type LuaScript, runScript } from "./scripts.ts";

function ttlMs(options: KvPutOptions | undefined): number {
  if (options?.ttlSeconds === undefined) return 0;
  assertNonNegative("ttlSeconds", options.ttlSeconds);
  if (options.ttlSeconds === 0) return 0;
  return Math.max(1, Math.round(options.ttlSeconds * 1000));
}

/** The scripts' code for what a write or delete found: 0 nothing live, 1 a value without expiry, 2 one with a TTL. */
const toPrevious = (code: unknown): KvPrevious | null => {
  const found = Number(code);
  return found === 0 ? null : { expiring: found === 2 };
};

/** Where a listing starts: after the cursor, or at the prefix when the cursor sorts before it. */
function listStart(cursor: string | undefined, prefix: string | undefined): string {
  const afterCursor = cursor === undefined ? undefined : `(${cursor}`;
  if (!prefix) return afterCursor ?? "-";
  if (cursor !== undefined && Buffer.compare(Buffer.from(cursor), Buffer.from(prefix)) >= 0) return `(${cursor}`;
  return `[${prefix}`;
}

/** KV buckets in Redis hashes with a lexicographic index; every operation is one Lua script. */
export function redisKv(client: RedisClient): KvPort {
  const run = (script: LuaScript, scope: string, bucket: string, args: (string | number)[]) => {
    const keys = bucketKeys(scope, bucket);
    return guarded(() =>
      runScript(
        client,
        script,
        [keys.values, keys.meta, keys.index, keys.expiry, keys.revision, usageKey(scope)],
        args,
      ),
    );
  };

  /** A write, refused by its quota (`QuotaExceeded`) when the script says so. */
  async function write(
    scope: string,
    bucket: string,
    key: string,
    value: string,
    options: KvPutOptions | undefined,
    expected: number | "",
  ) {
    const maxBytes = options?.maxBytes ?? "";
    if (maxBytes !== "") assertInteger("maxBytes", maxBytes, 0);
    const reply = (await run(KV_WRITE, scope, bucket, [key, value, ttlMs(options), expected, maxBytes])) as [
      number,
      number,
      number,
    ];
    const [written, revision, previous] = reply.map(Number) as [number, number, number];
    if (written === -1) throw new QuotaExceeded("bytes", revision, maxBytes as number);
    return { written: written === 1, revision, previous };
  }

  return {
    async kvPut(scope, bucket, key, value, options) {
      assertNames({ scope, bucket, key });
      const { revision, previous } = await write(scope, bucket, key, value, options, "");
      return { revision, previous: toPrevious(previous) };
    },

    async kvGet(scope, bucket, key) {
      assertNames({ scope, bucket, key });
      const reply = (await run(KV_GET, scope, bucket, [key])) as [string, number, string] | null;
      if (!reply) return null;
      const [value, revision, modified] = reply;
      return { key, value, revision: Number(revision), modified: new Date(Number(modified)) };
    },

    async kvDelete(scope, bucket, key) {
      assertNames({ scope, bucket, key });
      return toPrevious(await run(KV_DELETE, scope, bucket, [key]));
    },

    async kvKeys(scope, bucket, options = {}) {
      assertNames({ scope, bucket });
      const limit = options.limit ?? 100;
      assertInteger("limit", limit, 1, 10_000);
      if (options.cursor !== undefined) assertName("cursor", options.cursor);
      if (options.prefix) assertName("prefix", options.prefix);
      const start = listStart(options.cursor, options.prefix);
      const found = (await run(KV_KEYS, scope, bucket, [start, limit, options.prefix ?? ""])) as string[];
      const keys = found.slice(0, limit);
      return { keys, next: found.length > limit ? (keys.at(-1) ?? null) : null };
    },

    async kvCompareAndSet(scope, bucket, key, value, expectedRevision, options) {
      assertNames({ scope, bucket, key });
      assertInteger("expectedRevision", expectedRevision, 0);
      const { written, revision, previous } = await write(scope, bucket, key, value, options, expectedRevision);
      if (!written) return { ok: false, revision };
      return { ok: true, revision, previous: toPrevious(previous) };
    },

    async kvDeleteBucket(scope, bucket) {
      assertNames({ scope, bucket });
      const [keys, expiring] = (await run(KV_DELETE_BUCKET, scope, bucket, [])) as [number, number];
      return { keys: Number(keys), expiring: Number(expiring) };
    },
  };
}
