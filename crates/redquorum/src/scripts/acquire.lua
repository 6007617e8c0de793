-- Take the lock key if it is free, or refresh it if we already own it.
-- KEYS[1] lock key; ARGV[1] owner token; ARGV[2] ttl in ms.
-- Returns 1 when the key now holds our token, 0 when another owner holds it.
-- Re-acquiring our own key is idempotent so that a retried command cannot
-- report "taken" against ourselves.
local current = redis.call('get', KEYS[1])
if current == false then
  redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
elseif current == ARGV[1] then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 1
end
return 0
