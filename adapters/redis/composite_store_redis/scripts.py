"""The Lua scripts the adapter runs: guarded writes, index pages and include windows.

Every script touches only the keys of one hash tag (one Redis Cluster slot) on a cluster; on a
standalone server the write script may carry every key of an operation, which makes the whole
operation one atomic step. Index reads first purge members whose expiry instant (in the index's
TTL companion) has passed, so no read ever sees an index entry of an expired record.
"""

from __future__ import annotations

__all__ = ["APPLY", "INTERSECT", "PAGE", "RUN_META", "WINDOW"]

# Remove the members of KEYS[1] whose instant in companion KEYS[2] has passed (server clock).
_PURGE = """
local function purge(index, companion)
  if not companion then return end
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local dead = redis.call('ZRANGE', companion, '-inf', now, 'BYSCORE')
  for i = 1, #dead, 500 do
    local chunk = {unpack(dead, i, math.min(i + 499, #dead))}
    redis.call('ZREM', index, unpack(chunk))
    redis.call('ZREM', companion, unpack(chunk))
  end
end
local function records(members, prefix, nfields, first)
  local out = {}
  for i, m in ipairs(members) do
    if nfields == 0 then
      out[i] = redis.call('HGETALL', prefix .. m)
    else
      out[i] = redis.call('HMGET', prefix .. m, unpack(ARGV, first, first + nfields - 1))
    end
  end
  return out
end
"""

#: Check every guard, then run every command; nothing runs when a guard fails.
#: ARGV: guard count, then (op, key, field, value) per guard, then the commands as one JSON array
#: of arrays of strings (``Step.argv``).
#: Guards: h/hn field equals/absent, g/gn string equals/absent, s sha1 of a field (or '' when
#: absent), x/xn key exists/absent. Returns 0, or the 1-based number of the failed guard.
APPLY = """
local i = 2
local n = tonumber(ARGV[1])
for g = 1, n do
  local op, key, field, want = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  i = i + 4
  local ok
  if op == 'h' then ok = redis.call('HGET', key, field) == want
  elseif op == 'hn' then ok = redis.call('HEXISTS', key, field) == 0
  elseif op == 'g' then ok = redis.call('GET', key) == want
  elseif op == 'gn' then ok = redis.call('EXISTS', key) == 0
  elseif op == 'x' then ok = redis.call('EXISTS', key) == 1
  elseif op == 'xn' then ok = redis.call('EXISTS', key) == 0
  elseif op == 's' then
    local v = redis.call('HGET', key, field)
    if v then ok = redis.sha1hex(v) == want else ok = want == '' end
  else return redis.error_reply('unknown guard ' .. op) end
  if not ok then return g end
end
local commands = cjson.decode(ARGV[i])
for c = 1, #commands do
  redis.call(unpack(commands[c]))
end
return 0
"""

#: One page of a sorted-set index. KEYS: index [, TTL companion].
#: ARGV: 'score'|'lex', low, high, reverse '1'|'0', offset, count (-1: all), count total '1'|'0',
#: record key prefix ('' for members only), field count (0: whole hash), fields...
#: Returns {total or -1, members [, records]}.
PAGE = (
    _PURGE
    + """
local index = KEYS[1]
purge(index, KEYS[2])
local by = ARGV[1] == 'lex' and 'BYLEX' or 'BYSCORE'
local members
if ARGV[4] == '1' then
  members = redis.call('ZRANGE', index, ARGV[3], ARGV[2], by, 'REV', 'LIMIT', ARGV[5], ARGV[6])
else
  members = redis.call('ZRANGE', index, ARGV[2], ARGV[3], by, 'LIMIT', ARGV[5], ARGV[6])
end
local total = -1
if ARGV[7] == '1' then
  if by == 'BYLEX' then total = redis.call('ZLEXCOUNT', index, ARGV[2], ARGV[3])
  else total = redis.call('ZCOUNT', index, ARGV[2], ARGV[3]) end
end
if ARGV[8] == '' then return {total, members} end
return {total, members, records(members, ARGV[8], tonumber(ARGV[9]), 10)}
"""
)

#: A member and its neighbours by rank. KEYS: index [, TTL companion].
#: ARGV: member, before, after, record key prefix. Returns {members, records} ({} if absent).
WINDOW = (
    _PURGE
    + """
local index = KEYS[1]
purge(index, KEYS[2])
local rank = redis.call('ZRANK', index, ARGV[1])
if not rank then return {} end
local low = rank - tonumber(ARGV[2])
if low < 0 then low = 0 end
local members = redis.call('ZRANGE', index, low, rank + tonumber(ARGV[3]))
return {members, records(members, ARGV[4], 0, 0)}
"""
)

#: What a workflow run's indexes depend on, without shipping its snapshot: KEYS: the run.
#: Returns false for a missing run, else {createdAt, has resourceId, resourceId, has status,
#: status, sha1 of snapshot}.
RUN_META = """
local v = redis.call('HMGET', KEYS[1], 'createdAt', 'resourceId', 'snapshot')
if not v[1] then return false end
local status = false
if v[3] then
  local ok, doc = pcall(cjson.decode, v[3])
  if ok and type(doc) == 'table' and type(doc['status']) == 'string' then status = doc['status'] end
end
return {v[1], v[2] and '1' or '0', v[2] or '', status and '1' or '0', status or '',
        v[3] and redis.sha1hex(v[3]) or ''}
"""

#: One page of the intersection of sorted sets of one slot, ordered by the scores of the first.
#: KEYS: a scratch key (deleted before returning), the ordering set, the filter sets.
#: ARGV: low, high (scores), reverse '1'|'0', offset, count (-1: all), count total '1'|'0'.
#: Returns {total or -1, members}.
INTERSECT = """
local tmp = KEYS[1]
local args = {'ZINTERSTORE', tmp, #KEYS - 1}
for i = 2, #KEYS do args[#args + 1] = KEYS[i] end
args[#args + 1] = 'WEIGHTS'
args[#args + 1] = 1
for i = 3, #KEYS do args[#args + 1] = 0 end
redis.call(unpack(args))
local members
if ARGV[3] == '1' then
  members = redis.call('ZRANGE', tmp, ARGV[2], ARGV[1], 'BYSCORE', 'REV', 'LIMIT', ARGV[4], ARGV[5])
else
  members = redis.call('ZRANGE', tmp, ARGV[1], ARGV[2], 'BYSCORE', 'LIMIT', ARGV[4], ARGV[5])
end
local total = -1
if ARGV[6] == '1' then total = redis.call('ZCOUNT', tmp, ARGV[1], ARGV[2]) end
redis.call('DEL', tmp)
return {total, members}
"""
