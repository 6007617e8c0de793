-- Add one hold of a reentrant owner, if no other owner holds the key.
-- KEYS[1] lock key (a hash: one field per hold, named "<owner>:<hold>").
-- ARGV[1] owner id (32 hex digits); ARGV[2] hold field; ARGV[3] ttl in ms.
-- Returns 1 when the hold is recorded, 0 when another owner (or another lock
-- kind) holds the key.
-- Each hold is its own field rather than a counter, so a retried or partial
-- nested acquire is idempotent and every node's count stays exact for the
-- holds it granted (a plain counter would drift apart across nodes).
local kind = redis.call('type', KEYS[1]).ok
if kind ~= 'none' and kind ~= 'hash' then
  return 0
end
for _, field in ipairs(redis.call('hkeys', KEYS[1])) do
  if string.sub(field, 1, 32) ~= ARGV[1] then
    return 0
  end
end
redis.call('hset', KEYS[1], ARGV[2], 1)
-- Never shorten the lease of this owner's other holds.
if redis.call('pttl', KEYS[1]) < tonumber(ARGV[3]) then
  redis.call('pexpire', KEYS[1], ARGV[3])
end
return 1
