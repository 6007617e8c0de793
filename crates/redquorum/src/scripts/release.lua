-- Delete the lock key only if it still holds our token (owner-checked).
-- KEYS[1] lock key; ARGV[1] owner token.
-- Returns 1 when our key was deleted, 0 when it was absent or not ours.
-- On delete it publishes the token on 'redquorum:released:' .. KEYS[1] (the
-- prefix is notify.rs' CHANNEL_PREFIX), in the same call, so waiters wake
-- without polling. The publish is best effort (pcall): an ACL user without
-- the channel permission still releases; waiters then wake by their backoff.
if redis.call('get', KEYS[1]) == ARGV[1] then
  redis.call('del', KEYS[1])
  redis.pcall('publish', 'redquorum:released:' .. KEYS[1], ARGV[1])
  return 1
end
return 0
