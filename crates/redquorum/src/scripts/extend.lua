-- Reset the lock key's expiry only if it still holds our token (owner-checked).
-- KEYS[1] lock key; ARGV[1] owner token; ARGV[2] ttl in ms.
-- Returns 1 when extended, 0 when the key is absent or not ours.
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
