-- Delete the lock key only if it still holds our token (owner-checked).
-- KEYS[1] lock key; ARGV[1] owner token.
-- Returns 1 when our key was deleted, 0 when it was absent or not ours.
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0
