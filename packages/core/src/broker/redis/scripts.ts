import { createHash } from "node:crypto";
import type { RedisClient } from "./client.ts";

/** A Lua script, sent by its SHA1 and loaded on first use (or after a server restart). */
export interface LuaScript {
  readonly source: string;
  readonly sha: string;
}

function lua(source: string): LuaScript {
  return { source, sha: createHash("sha1").update(source).digest("hex") };
}

export async function runScript(
  client: RedisClient,
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
 * a release) without touching their delivery counts. Returns how many it held.
 * KEYS: stream. ARGV: group, consumer, idleMs, ids...
 */
export const SET_IDLE = lua(`
local key, group, consumer, idle = KEYS[1], ARGV[1], ARGV[2], ARGV[3]
local held = 0
for i = 4, #ARGV do
  local info = redis.call('XPENDING', key, group, ARGV[i], ARGV[i], 1)
  if info[1] and info[1][2] == consumer then
    redis.call('XCLAIM', key, group, consumer, 0, ARGV[i], 'IDLE', idle, 'JUSTID')
    held = held + 1
  end
end
return held
`);

/**
 * `trim_stream(key, usage, max_len, max_age)`: removes the oldest entries beyond `max_len` and
 * older than `max_age` ms by the server's clock ('' for either: no such limit), then drops
 * every entry no longer in the stream from every group's pending list, as the PostgreSQL
 * adapter does (XTRIM leaves them there: they would still be counted, touched and
 * acknowledged). Returns how many entries were removed.
 *
 * Entry ids carry their time, except in numbered streams (ids `0-<seq>`, see
 * APPEND_NUMBERED), whose entries carry it in field `t`. There the first young entry is
 * found by a binary search on the numbers (entries are appended in time order), reading
 * one entry per step: a few reads when there is something to trim, none when the oldest
 * entry is young.
 */
const TRIM_PRELUDE = `${NOW_MS}
local function time_of(entry)
  local fields = entry[2]
  for i = 1, #fields, 2 do
    if fields[i] == 't' then return tonumber(fields[i + 1]) end
  end
  return 0
end
local function seq_of(entry)
  return tonumber(string.match(entry[1], '^0%-(%d+)$'))
end
-- The id of the first entry at or after the oldest young one; nil when all are old.
local function first_young_numbered(key, oldest, cutoff)
  local newest = redis.call('XREVRANGE', key, '+', '-', 'COUNT', 1)[1]
  if time_of(newest) < cutoff then return nil end
  -- The first entry at or after number old is old; at or after number young, young.
  local old, young = seq_of(oldest), seq_of(newest)
  while young - old > 1 do
    local middle = math.floor((old + young) / 2)
    local entry = redis.call('XRANGE', key, '0-' .. middle, '+', 'COUNT', 1)[1]
    if time_of(entry) >= cutoff then young = middle else old = middle end
  end
  return redis.call('XRANGE', key, '0-' .. young, '+', 'COUNT', 1)[1][1]
end
-- Bytes of payload of the numbered entries among the \`count\` oldest (all: XLEN), or before
-- \`stop\` (an id, excluded), read 1,000 at a time: what a trim or a delete takes off the
-- scope's \`streams\` usage. Every entry is counted once, when it goes.
local function payload_bytes(key, count, stop)
  local bytes, start = 0, '-'
  local upper = stop and ('(' .. stop) or '+'
  while count == nil or count > 0 do
    local batch = redis.call('XRANGE', key, start, upper, 'COUNT', count and math.min(count, 1000) or 1000)
    if #batch == 0 then break end
    for _, entry in ipairs(batch) do
      if seq_of(entry) then
        local fields = entry[2]
        for i = 1, #fields, 2 do
          if fields[i] == 'p' then bytes = bytes + #fields[i + 1] end
        end
      end
    end
    if count then count = count - #batch end
    start = '(' .. batch[#batch][1]
  end
  return bytes
end
local function trim_stream(key, usage, max_len, max_age)
  if redis.call('EXISTS', key) == 0 then return 0 end
  local removed, bytes = 0, 0
  if max_len ~= '' then
    local excess = redis.call('XLEN', key) - tonumber(max_len)
    if excess > 0 then
      bytes = bytes + payload_bytes(key, excess, nil)
      removed = removed + redis.call('XTRIM', key, 'MAXLEN', '=', max_len)
    end
  end
  if max_age ~= '' then
    local cutoff = now - tonumber(max_age)
    local oldest = redis.call('XRANGE', key, '-', '+', 'COUNT', 1)[1]
    if oldest and seq_of(oldest) and time_of(oldest) < cutoff then
      local young = first_young_numbered(key, oldest, cutoff)
      if young then
        bytes = bytes + payload_bytes(key, nil, young)
        removed = removed + redis.call('XTRIM', key, 'MINID', young)
      else
        bytes = bytes + payload_bytes(key, nil, nil)
        removed = removed + redis.call('XTRIM', key, 'MAXLEN', '=', 0)
      end
    elseif oldest and not seq_of(oldest) then
      removed = removed + redis.call('XTRIM', key, 'MINID', string.format('%d-0', math.max(0, cutoff)))
    end
  end
  if bytes > 0 then redis.call('HINCRBY', usage, 'streams', -bytes) end
  if removed == 0 then return 0 end
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
end
`;

/**
 * KEYS: stream, the scope's usage. ARGV: max length, max age in ms ('' for either: none).
 * Returns how many entries were removed.
 */
export const TRIM = lua(`${TRIM_PRELUDE}
return trim_stream(KEYS[1], KEYS[2], ARGV[1], ARGV[2])
`);

/**
 * Appends to a numbered stream: Redis itself numbers `0-*` ids 0-1, 0-2, ... (it keeps the
 * last id when entries are trimmed), and the time goes in field `t`. Then trims as TRIM does.
 * The payload's bytes go on the scope's \`streams\` usage; the append is refused first when
 * the stream holds max entries already, or the usage would pass max bytes.
 * KEYS: stream, the scope's usage. ARGV: payload, max length, max age in ms, max entries,
 * max bytes ('' for any: none). Returns {1, id}, or {0, 'entries' | 'bytes', used}.
 */
export const APPEND_NUMBERED = lua(`${TRIM_PRELUDE}
if ARGV[4] ~= '' then
  local length = redis.call('XLEN', KEYS[1])
  if length >= tonumber(ARGV[4]) then return { 0, 'entries', length } end
end
if ARGV[5] ~= '' then
  local used = tonumber(redis.call('HGET', KEYS[2], 'streams') or '0')
  if used + #ARGV[1] > tonumber(ARGV[5]) then return { 0, 'bytes', used } end
end
local id = redis.call('XADD', KEYS[1], '0-*', 'p', ARGV[1], 't', now)
redis.call('HINCRBY', KEYS[2], 'streams', #ARGV[1])
trim_stream(KEYS[1], KEYS[2], ARGV[2], ARGV[3])
return { 1, id }
`);

/** Deletes a stream, taking its numbered entries' bytes off the scope's usage. KEYS: stream, usage. Returns 1 if it existed. */
export const DELETE_STREAM = lua(`${TRIM_PRELUDE}
local oldest = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 1)[1]
if oldest and seq_of(oldest) then
  local bytes = payload_bytes(KEYS[1], nil, nil)
  if bytes > 0 then redis.call('HINCRBY', KEYS[2], 'streams', -bytes) end
end
return redis.call('DEL', KEYS[1])
`);

/** The payload of a lane's turn (see `laneTurnOf`), from the lane in ARGV[1]. */
const TURN_PAYLOAD = `
local function turn_payload(turn) return '{"lane":' .. cjson.encode(ARGV[1]) .. ',"turn":' .. turn .. '}' end
`;

/**
 * Appends entries to a lane, in order. A lane with no turn on the stream puts the first entry
 * straight on the stream, its first turn right behind it, and the others in the lane; else
 * they all wait in the lane.
 * KEYS: the lane's entries, the stream's lane turns, the stream. ARGV: lane, then the payloads
 * (at most LANE_APPEND_MAX).
 */
export const APPEND_TO_LANE = lua(`${TURN_PAYLOAD}
local first = 2
if redis.call('HSETNX', KEYS[2], ARGV[1], 1) == 1 then
  redis.call('XADD', KEYS[3], '*', 'p', ARGV[2])
  redis.call('XADD', KEYS[3], '*', 'p', turn_payload(1))
  first = 3
end
if #ARGV >= first then redis.call('RPUSH', KEYS[1], unpack(ARGV, first)) end
return 1
`);

/** Most payloads one APPEND_TO_LANE call takes (Lua's unpack is bounded by its C stack). */
export const LANE_APPEND_MAX = 1000;

/**
 * Moves up to count of a lane's oldest entries onto the stream, then the lane's next turn when
 * entries are left (else the lane is forgotten). A turn that is not the lane's current one moves
 * nothing. KEYS: as APPEND_TO_LANE. ARGV: lane, turn, count. Returns how many entries moved.
 */
export const ADMIT_LANE = lua(`${TURN_PAYLOAD}
local current = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0')
if current == 0 or current ~= tonumber(ARGV[2]) then return 0 end
local moved = redis.call('LPOP', KEYS[1], tonumber(ARGV[3])) or {}
for _, payload in ipairs(moved) do redis.call('XADD', KEYS[3], '*', 'p', payload) end
if redis.call('LLEN', KEYS[1]) > 0 then
  redis.call('HSET', KEYS[2], ARGV[1], current + 1)
  redis.call('XADD', KEYS[3], '*', 'p', turn_payload(current + 1))
else
  redis.call('HDEL', KEYS[2], ARGV[1])
end
return #moved
`);

/**
 * A sliding window approximated from two fixed ones: the hash holds the current window's
 * number (\`i\`) and count (\`c\`) and the previous window's count (\`p\`); the window's count
 * is \`p\` weighted by how much of the previous window still overlaps, plus \`c\`.
 * KEYS: the window's hash. ARGV: limit, windowMs, count (0: only read).
 * Returns {granted, used (rounded), waitMs until one more call fits}.
 */
export const TAKE = lua(`${NOW_MS}
local limit, window, count = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local idx = math.floor(now / window)
local frac = (now - idx * window) / window
local state = redis.call('HMGET', KEYS[1], 'i', 'c', 'p')
local i, c, p = tonumber(state[1]), tonumber(state[2]) or 0, tonumber(state[3]) or 0
if i == nil then c, p = 0, 0 elseif i == idx - 1 then p, c = c, 0 elseif i ~= idx then p, c = 0, 0 end
local used = p * (1 - frac) + c
local granted = math.max(0, math.min(count, math.floor(limit - used)))
c = c + granted
if count > 0 then
  redis.call('HSET', KEYS[1], 'i', idx, 'c', c, 'p', p)
  redis.call('PEXPIRE', KEYS[1], window * 2)
end
local wait = 0
if granted < count then
  if p > 0 and c <= limit - 1 then
    wait = (1 - (limit - 1 - c) / p - frac) * window
  else
    wait = (idx + 1) * window - now + math.max(0, 1 - (limit - 1) / math.max(c, 1)) * window
  end
end
return { granted, math.floor(used + granted + 0.5), math.ceil(wait) }
`);

/**
 * Sliding-window log: one sorted-set member per allowed call, scored by the server's
 * time. Atomic in Redis, hence exact under any concurrency; a denied call adds nothing.
 * Decides `count` calls at once, in order: the first ones while slots are free.
 * KEYS: the limiter's set. ARGV: limit, windowMs, count, a unique prefix for the members.
 * Returns {allowed, waitMs}: how many of the calls were allowed, and for the others the wait.
 */
export const RATE_LIMIT = lua(`${NOW_MS}
local limit, window, count = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local calls = redis.call('ZCARD', KEYS[1])
local allowed = math.max(0, math.min(count, limit - calls))
if allowed > 0 then
  local members = {}
  for i = 1, allowed do
    members[2 * i - 1] = now
    members[2 * i] = ARGV[4] .. ':' .. i
  end
  redis.call('ZADD', KEYS[1], unpack(members))
  redis.call('PEXPIRE', KEYS[1], window)
end
if allowed == count then return { allowed, 0 } end
-- A slot frees up when the window holds limit - 1 calls: once the (calls - limit)-th call
-- (from 0, oldest first) has left it. That is the oldest one unless the limit was lowered.
calls = calls + allowed
local freeing = redis.call('ZRANGE', KEYS[1], calls - limit, calls - limit, 'WITHSCORES')
return { allowed, tonumber(freeing[2]) + window - now }
`);

/**
 * What every KV script shares. A bucket is five keys (see keys.ts); a key's metadata
 * is "revision|modifiedMs|expiresAtMs" (0: never expires). Expired keys are invisible
 * at once and removed lazily: up to 100 per write, and whenever a listing meets them.
 */
const KV_PRELUDE = `${NOW_MS}
local values, meta, index, expiry, revision, usage = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
-- Bytes a key keeps (its name and value): what it counts for on the scope's \`kv\` usage.
local function kept(key)
  local size = redis.call('HSTRLEN', values, key)
  if size == 0 then return 0 end
  return size + #key
end
local function forget(keys)
  local bytes = 0
  for _, key in ipairs(keys) do bytes = bytes + kept(key) end
  if bytes > 0 then redis.call('HINCRBY', usage, 'kv', -bytes) end
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
  return tonumber(rev), modified, expires
end
-- What a write or delete found: 0 no live value, 1 a value without expiry, 2 one with a TTL.
local function previous(key)
  local rev, _, expires = live(key)
  if not rev then return 0 end
  if expires == 0 then return 1 end
  return 2
end
`;

/**
 * ARGV: key, value, ttlMs (0: none), expected revision ('' for an unconditional put), max
 * bytes of the scope's \`kv\` usage ('' for none). Returns {written, revision, previous}
 * (previous as the prelude's \`previous\`), or {-1, used, 0} when the write would pass max bytes.
 */
export const KV_WRITE = lua(`${KV_PRELUDE}
purge_expired()
local key = ARGV[1]
if ARGV[4] ~= '' then
  local current = live(key) or 0
  if current ~= tonumber(ARGV[4]) then return { 0, current, 0 } end
end
local growth = #key + #ARGV[2] - kept(key)
if ARGV[5] ~= '' then
  local used = tonumber(redis.call('HGET', usage, 'kv') or '0')
  if used + growth > tonumber(ARGV[5]) then return { -1, used, 0 } end
end
redis.call('HINCRBY', usage, 'kv', growth)
local replaced = previous(key)
local rev = redis.call('INCR', revision)
local ttl = tonumber(ARGV[3])
local expires = 0
if ttl > 0 then expires = now + ttl end
redis.call('HSET', values, key, ARGV[2])
redis.call('HSET', meta, key, string.format('%d|%d|%d', rev, now, expires))
redis.call('ZADD', index, 0, key)
if expires > 0 then redis.call('ZADD', expiry, expires, key) else redis.call('ZREM', expiry, key) end
return { 1, rev, replaced }
`);

/** ARGV: key. Returns {value, revision, modifiedMs} or nil. */
export const KV_GET = lua(`${KV_PRELUDE}
local rev, modified = live(ARGV[1])
if not rev then return false end
return { redis.call('HGET', values, ARGV[1]), rev, modified }
`);

/** ARGV: key. Returns what was deleted, as the prelude's `previous`. */
export const KV_DELETE = lua(`${KV_PRELUDE}
purge_expired()
local existed = previous(ARGV[1])
forget({ ARGV[1] })
return existed
`);

/**
 * ARGV: where to start (a BYLEX bound: '-', '(' .. key or '[' .. prefix), limit, prefix
 * ('' for none). Returns up to limit+1 live keys from there, in byte order; with a prefix,
 * only keys that start with it (they sort before prefix .. '\255', a byte no UTF-8 text holds).
 */
export const KV_KEYS = lua(`${KV_PRELUDE}
purge_expired()
local start = ARGV[1]
local stop = '+'
if ARGV[3] ~= '' then stop = '[' .. ARGV[3] .. '\\255' end
local wanted = tonumber(ARGV[2]) + 1
local found, stale = {}, {}
while #found < wanted do
  local batch = redis.call('ZRANGE', index, start, stop, 'BYLEX', 'LIMIT', 0, wanted - #found)
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

/**
 * Deletes a bucket's keys (its revision counter stays, so revisions are never reused).
 * Returns {live keys, live keys with a TTL}.
 */
export const KV_DELETE_BUCKET = lua(`${KV_PRELUDE}
local count, expiring, bytes = 0, 0, 0
for _, key in ipairs(redis.call('HKEYS', meta)) do
  local found = previous(key)
  if found > 0 then count = count + 1 end
  if found == 2 then expiring = expiring + 1 end
  bytes = bytes + kept(key)
end
if bytes > 0 then redis.call('HINCRBY', usage, 'kv', -bytes) end
redis.call('DEL', values, meta, index, expiry)
return { count, expiring }
`);

/**
 * `group_consumers(key, group)`: the group's members as {name, pending, idle}, or an empty
 * list when the stream or the group does not exist.
 */
const CONSUMERS_PRELUDE = `
local function group_consumers(key, group)
  if redis.call('EXISTS', key) == 0 then return {} end
  local reply = redis.pcall('XINFO', 'CONSUMERS', key, group)
  if type(reply) ~= 'table' or reply.err then return {} end
  local members = {}
  for _, fields in ipairs(reply) do
    local member = {}
    for i = 1, #fields, 2 do member[fields[i]] = fields[i + 1] end
    members[#members + 1] = { member.name, tonumber(member.pending), tonumber(member.idle) }
  end
  return members
end
`;

/** The group's members: {name, pending, idleMs} each. KEYS: stream. ARGV: group. */
export const GROUP_CONSUMERS = lua(`${CONSUMERS_PRELUDE}
return group_consumers(KEYS[1], ARGV[1])
`);

/**
 * Deletes the members holding no entries and idle for at least ARGV[2] ms, in one step
 * (XGROUP DELCONSUMER would drop the entries of a member holding some). Returns their names.
 * KEYS: stream. ARGV: group, minIdleMs.
 */
export const REMOVE_IDLE_CONSUMERS = lua(`${CONSUMERS_PRELUDE}
local key, group, min_idle = KEYS[1], ARGV[1], tonumber(ARGV[2])
local removed = {}
for _, member in ipairs(group_consumers(key, group)) do
  if member[2] == 0 and member[3] >= min_idle then
    redis.call('XGROUP', 'DELCONSUMER', key, group, member[1])
    removed[#removed + 1] = member[1]
  end
end
return removed
`);

/**
 * KEYS: stream. Removes the entries before what any group still needs: its oldest pending
 * entry, or the entry after its read position. Returns how many were removed.
 */
export const TRIM_ACKNOWLEDGED = lua(`
local key = KEYS[1]
if redis.call('EXISTS', key) == 0 then return 0 end
local function split(id)
  local ms, seq = string.match(id, '^(%d+)%-(%d+)$')
  return tonumber(ms), tonumber(seq)
end
local function before(a, b)
  local am, as = split(a)
  local bm, bs = split(b)
  return am < bm or (am == bm and as < bs)
end
local keep
for _, info in ipairs(redis.call('XINFO', 'GROUPS', key)) do
  local name, last
  for i = 1, #info, 2 do
    if info[i] == 'name' then name = info[i + 1] elseif info[i] == 'last-delivered-id' then last = info[i + 1] end
  end
  local ms, seq = split(last)
  local needed = string.format('%d-%d', ms, seq + 1)
  local pending = redis.call('XPENDING', key, name)
  if tonumber(pending[1]) > 0 and before(pending[2], needed) then needed = pending[2] end
  if keep == nil or before(needed, keep) then keep = needed end
end
if keep == nil then return 0 end
return redis.call('XTRIM', key, 'MINID', keep)
`);
