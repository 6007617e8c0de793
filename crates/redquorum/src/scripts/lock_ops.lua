-- The plain lock's three operations, one or several per call (group commit:
-- see batch.rs). Operation i is KEYS[i] with ARGV[3i-2] its kind ('a'
-- acquire, 'e' extend, 'r' release), ARGV[3i-1] the owner token and ARGV[3i]
-- the ttl in ms (unused by release). Returns one integer per operation:
--   1  acquire: the key now holds our token (taken now, or already ours, so
--      a retried acquire never reports "taken" against ourselves);
--      extend: our key's expiry was reset; release: our key was deleted;
--   0  the key is another owner's, or absent (extend, release);
--  -1  the key holds another type of value (WRONGTYPE). Only that operation
--      fails: the others in the call still run.
-- A release publishes the token on 'redquorum:released:' .. key (the prefix
-- is notify.rs' CHANNEL_PREFIX) at the end of the call, so waiters wake
-- without polling; not when an acquire later in the same call took the key
-- (a local hand-off: the lock was never free, waking others would only cost
-- them an attempt). The publish is best effort (pcall): an ACL user without
-- the channel permission still releases, and waiters then wake by their backoff.
local results = {}
local unannounced = {}
for i, key in ipairs(KEYS) do
  local kind, owner, ttl = ARGV[3 * i - 2], ARGV[3 * i - 1], ARGV[3 * i]
  local current = redis.pcall('get', key)
  if type(current) == 'table' then
    results[i] = -1
  elseif current == owner then
    if kind == 'r' then
      redis.call('del', key)
      unannounced[key] = owner
    else
      redis.call('pexpire', key, ttl)
    end
    results[i] = 1
  elseif current == false and kind == 'a' then
    redis.call('set', key, owner, 'PX', ttl)
    unannounced[key] = nil
    results[i] = 1
  else
    results[i] = 0
  end
end
for key, owner in pairs(unannounced) do
  redis.pcall('publish', 'redquorum:released:' .. key, owner)
end
return results
