import { createHash } from "node:crypto";
import type { Redis } from "ioredis";

/** A Lua script, sent by its SHA1 and loaded on first use (or after a server restart). */
export interface LuaScript {
  readonly source: string;
  readonly sha: string;
}

function lua(source: string): LuaScript {
  return { source, sha: createHash("sha1").update(source).digest("hex") };
}

export async function runScript(
  client: Redis,
  script: LuaScript,
  keys: string[],
  args: (string | number)[],
): Promise<unknown> {
  try {
    return await client.evalsha(script.sha, keys.length, ...keys, ...args);
  } catch (error) {
    if (!(error instanceof Error) || !error.message.startsWith("NOSCRIPT")) throw error;
    return client.eval(script.source, keys.length, ...keys, ...args);
  }
}

const NOW_MS = `
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
`;

/**
 * Takes over idle pending entries and returns `{id, fields, deliveries}` for each.
 * XAUTOCLAIM scans at most COUNT*10 pending entries per call, so it continues from
 * its cursor (a bounded number of times) until it has `count` entries or has seen
 * the whole pending list. Entries trimmed from the stream are dropped by XAUTOCLAIM.
 * KEYS: stream. ARGV: group, consumer, minIdleMs, count.
 */
export const CLAIM_IDLE = lua(`
local key, group, consumer = KEYS[1], ARGV[1], ARGV[2]
local min_idle, count = ARGV[3], tonumber(ARGV[4])
local cursor = '0-0'
local claimed = {}
for _ = 1, 100 do
  local reply = redis.call('XAUTOCLAIM', key, group, consumer, min_idle, cursor, 'COUNT', count - #claimed)
  cursor = reply[1]
  for _, entry in ipairs(reply[2]) do
    if type(entry) == 'table' and type(entry[2]) == 'table' then
      local info = redis.call('XPENDING', key, group, entry[1], entry[1], 1)
      claimed[#claimed + 1] = { entry[1], entry[2], info[1][4] }
    end
  end
  if cursor == '0-0' or #claimed >= count then break end
end
return claimed
`);

/**
 * Sets the idle time of the entries `consumer` still holds (0: a heartbeat; more:
 * a release) without touching their delivery counts, or taking one delivery back
 * when ARGV[4] is 1. Returns how many it held.
 * KEYS: stream. ARGV: group, consumer, idleMs, undoDelivery (0 or 1), ids...
 */
export const SET_IDLE = lua(`
local key, group, consumer, idle, undo = KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4] == '1'
local held = 0
for i = 5, #ARGV do
  local info = redis.call('XPENDING', key, group, ARGV[i], ARGV[i], 1)
  if info[1] and info[1][2] == consumer then
    if undo then
      local count = math.max(0, tonumber(info[1][4]) - 1)
      redis.call('XCLAIM', key, group, consumer, 0, ARGV[i], 'IDLE', idle, 'RETRYCOUNT', count, 'JUSTID')
    else
      redis.call('XCLAIM', key, group, consumer, 0, ARGV[i], 'IDLE', idle, 'JUSTID')
    end
    held = held + 1
  end
end
return held
`);

/**
 * Removes the oldest entries beyond ARGV[1] (max length) and older than ARGV[2] ms by
 * the server's clock ('' for either: no such limit), then drops every entry no longer
 * in the stream from every group's pending list, as the PostgreSQL adapter does (XTRIM
 * leaves them there: they would still be counted, touched and acknowledged).
 * KEYS: stream. Returns how many entries were removed.
 */
export const TRIM = lua(`${NOW_MS}
local key = KEYS[1]
if redis.call('EXISTS', key) == 0 then return 0 end
local removed = 0
if ARGV[1] ~= '' then removed = removed + redis.call('XTRIM', key, 'MAXLEN', '=', ARGV[1]) end
if ARGV[2] ~= '' then
  local min_ms = math.max(0, now - tonumber(ARGV[2]))
  removed = removed + redis.call('XTRIM', key, 'MINID', string.format('%d-0', min_ms))
end
local first = redis.call('XRANGE', key, '-', '+', 'COUNT', 1)[1]
local gone_before = first and ('(' .. first[1]) or '+'
for _, info in ipairs(redis.call('XINFO', 'GROUPS', key)) do
  local group
  for i = 1, #info, 2 do
    if info[i] == 'name' then group = info[i + 1] end
  end
  while true do
    local gone = redis.call('XPENDING', key, group, '-', gone_before, 1000)
    if #gone == 0 then break end
    local ids = {}
    for i, pending in ipairs(gone) do ids[i] = pending[1] end
    redis.call('XACK', key, group, unpack(ids))
  end
end
return removed
`);

/**
 * Sliding-window log: one sorted-set member per allowed call, scored by the server's
 * time. Atomic in Redis, hence exact under any concurrency; a denied call adds nothing.
 * KEYS: the limiter's set. ARGV: limit, windowMs, a unique member. Returns {allowed, waitMs}.
 */
export const RATE_LIMIT = lua(`${NOW_MS}
local limit, window = tonumber(ARGV[1]), tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local calls = redis.call('ZCARD', KEYS[1])
if calls < limit then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], window)
  return { 1, 0 }
end
-- A slot frees up when the window holds limit - 1 calls: once the (calls - limit)-th call
-- (from 0, oldest first) has left it. That is the oldest one unless the limit was lowered.
local freeing = redis.call('ZRANGE', KEYS[1], calls - limit, calls - limit, 'WITHSCORES')
return { 0, tonumber(freeing[2]) + window - now }
`);

/**
 * What every KV script shares. A bucket is five keys (see keys.ts); a key's metadata
 * is "revision|modifiedMs|expiresAtMs" (0: never expires). Expired keys are invisible
 * at once and removed lazily: up to 100 per write, and whenever a listing meets them.
 */
const KV_PRELUDE = `${NOW_MS}
local values, meta, index, expiry, revision = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local function forget(keys)
  redis.call('HDEL', values, unpack(keys))
  redis.call('HDEL', meta, unpack(keys))
  redis.call('ZREM', index, unpack(keys))
  redis.call('ZREM', expiry, unpack(keys))
end
local function purge_expired()
  local expired = redis.call('ZRANGEBYSCORE', expiry, '-inf', now, 'LIMIT', 0, 100)
  if #expired > 0 then forget(expired) end
end
local function live(key)
  local m = redis.call('HGET', meta, key)
  if not m then return nil end
  local rev, modified, expires = string.match(m, '^(%d+)|(%d+)|(%d+)$')
  expires = tonumber(expires)
  if expires ~= 0 and expires <= now then return nil end
  return tonumber(rev), modified
end
`;

/** ARGV: key, value, ttlMs (0: none), expected revision ('' for an unconditional put). Returns {written, revision}. */
export const KV_WRITE = lua(`${KV_PRELUDE}
purge_expired()
local key = ARGV[1]
if ARGV[4] ~= '' then
  local current = live(key) or 0
  if current ~= tonumber(ARGV[4]) then return { 0, current } end
end
local rev = redis.call('INCR', revision)
local ttl = tonumber(ARGV[3])
local expires = 0
if ttl > 0 then expires = now + ttl end
redis.call('HSET', values, key, ARGV[2])
redis.call('HSET', meta, key, string.format('%d|%d|%d', rev, now, expires))
redis.call('ZADD', index, 0, key)
if expires > 0 then redis.call('ZADD', expiry, expires, key) else redis.call('ZREM', expiry, key) end
return { 1, rev }
`);

/** ARGV: key. Returns {value, revision, modifiedMs} or nil. */
export const KV_GET = lua(`${KV_PRELUDE}
local rev, modified = live(ARGV[1])
if not rev then return false end
return { redis.call('HGET', values, ARGV[1]), rev, modified }
`);

/** ARGV: key. Returns 1 when a live key was deleted. */
export const KV_DELETE = lua(`${KV_PRELUDE}
purge_expired()
local existed = live(ARGV[1]) and 1 or 0
forget({ ARGV[1] })
return existed
`);

/** ARGV: cursor ('' for the start), limit. Returns up to limit+1 live keys after the cursor, in byte order. */
export const KV_KEYS = lua(`${KV_PRELUDE}
purge_expired()
local start = '-'
if ARGV[1] ~= '' then start = '(' .. ARGV[1] end
local wanted = tonumber(ARGV[2]) + 1
local found, stale = {}, {}
while #found < wanted do
  local batch = redis.call('ZRANGE', index, start, '+', 'BYLEX', 'LIMIT', 0, wanted - #found)
  if #batch == 0 then break end
  for _, key in ipairs(batch) do
    if live(key) then found[#found + 1] = key else stale[#stale + 1] = key end
    start = '(' .. key
  end
  if #stale >= 100 then
    forget(stale)
    stale = {}
  end
end
if #stale > 0 then forget(stale) end
return found
`);

/** Deletes a bucket's keys (its revision counter stays, so revisions are never reused). Returns how many were live. */
export const KV_DELETE_BUCKET = lua(`${KV_PRELUDE}
local count = 0
for _, key in ipairs(redis.call('HKEYS', meta)) do
  if live(key) then count = count + 1 end
end
redis.call('DEL', values, meta, index, expiry)
return count
`);
