/**
 * Redis key names. Every key starts with the scope as a hash tag (`{scope}`), so all
 * keys of one account live in one cluster slot (multi-key Lua stays legal) and a
 * cluster shards by account. Each name component is URI-encoded: `:`, `{` and `}`
 * never appear raw, so no two (scope, name) pairs map to the same key.
 */
const part = encodeURIComponent;

/** The hash tag of a scope's keys: what a cluster hashes to place them. */
export const scopeTag = (scope: string) => `{${part(scope)}}`;

const tag = scopeTag;

export const streamKey = (scope: string, stream: string) => `${tag(scope)}:stream:${part(stream)}`;

/** The lanes of a stream: a hash of each lane with entries waiting to its turn number, and each lane's list of entries. */
export const laneKeys = (scope: string, stream: string) => ({
  turns: `${tag(scope)}:lanes:${part(stream)}`,
  entries: (lane: string) => `${tag(scope)}:lane:${part(stream)}:${part(lane)}`,
});

/** The keys of one KV bucket: values and metadata by key, a lexicographic index, expiry times, the revision counter. */
export function bucketKeys(scope: string, bucket: string) {
  const base = `${tag(scope)}:kv:${part(bucket)}`;
  return {
    values: `${base}:values`,
    meta: `${base}:meta`,
    index: `${base}:index`,
    expiry: `${base}:expiry`,
    revision: `${base}:revision`,
  };
}

export const counterKey = (scope: string, name: string) => `${tag(scope)}:counter:${part(name)}`;

/** What a scope keeps, in bytes: fields `kv` and `streams` (numbered streams' payloads). */
export const usageKey = (scope: string) => `${tag(scope)}:usage`;

/** A two-window count (see TAKE). */
export const windowKey = (scope: string, key: string) => `${tag(scope)}:window:${part(key)}`;

export const rateLimitKey = (scope: string, key: string) => `${tag(scope)}:ratelimit:${part(key)}`;

export const channelName = (scope: string, channel: string) => `${tag(scope)}:channel:${part(channel)}`;
