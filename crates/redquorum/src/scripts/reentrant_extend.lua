-- Renew the key's expiry if it still records this hold (owner-checked).
-- KEYS[1] lock key; ARGV[1] hold field; ARGV[2] ttl in ms.
-- Returns 1 when extended, 0 when the hold is gone.
if redis.call('type', KEYS[1]).ok ~= 'hash' then
  return 0
end
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
  return 0
end
-- The expiry is shared by the owner's holds: only ever lengthen it.
if redis.call('pttl', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('pexpire', KEYS[1], ARGV[2])
end
return 1
