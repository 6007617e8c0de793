-- The plain lock's operations, one or several per call (group commit: see
-- batch.rs). Operation i is ARGV[3i-2] its kind, ARGV[3i-1] the owner token
-- and ARGV[3i] the ttl in ms (unused by release), on the next key of KEYS:
--   'a' acquire, 'e' extend, 'r' release: one key, the lock key;
--   'f' acquire and propose a fencing token: two keys, the lock key and its
--       fence key (the first fencing round, folded into the acquire).
-- Returns one integer per operation:
--   1  acquire: the key now holds our token (taken now, or already ours, so
--      a retried acquire never reports "taken" against ourselves);
--      extend: our key's expiry was reset; release: our key was deleted;
--   P  'f' acquired: the proposal max(stored + 1, node_ms * 1024) >= 1024,
--      now stored in the fence key (as fence_propose.lua, which has the why);
--   0  the key is another owner's, or absent (extend, release);
--  -1  the lock key holds another type of value (WRONGTYPE): this
--      operation fails alone, the others still run;
--  -2  'f' acquired, but no proposal: the fence key does not hold a number
--      (the caller then cannot count this node toward the token).
-- A release publishes the token on 'redquorum:released:' .. key (the prefix
-- is notify.rs' CHANNEL_PREFIX) at the end of the call, so waiters wake
-- without polling; not when an acquire later in the same call took the key
-- (a local hand-off: the lock was never free, waking others would only cost
-- them an attempt). The publish is best effort (pcall): an ACL user without
-- the channel permission still releases, and waiters then wake by their backoff.

-- The fence key's next proposal, stored; nil if it does not hold a number.
local function propose(fence_key)
  local stored = redis.pcall('get', fence_key)
  if type(stored) == 'table' then
    return nil
  end
  stored = stored == false and 0 or tonumber(stored)
  if stored == nil then
    return nil
  end
  local time = redis.call('time')
  local now_ms = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  local proposal = math.max(stored + 1, now_ms * 1024)
  redis.call('set', fence_key, string.format('%.0f', proposal), 'PX', 86400000)
  return proposal
end

local results = {}
local unannounced = {}
local next_key = 1
for i = 1, #ARGV / 3 do
  local kind, owner, ttl = ARGV[3 * i - 2], ARGV[3 * i - 1], ARGV[3 * i]
  local key = KEYS[next_key]
  next_key = next_key + 1
  local fence_key
  if kind == 'f' then
    fence_key = KEYS[next_key]
    next_key = next_key + 1
  end
  local current = redis.pcall('get', key)
  if type(current) == 'table' then
    results[i] = -1
  elseif kind == 'r' or kind == 'e' then
    if current == owner then
      if kind == 'r' then
        redis.call('del', key)
        unannounced[key] = owner
      else
        redis.call('pexpire', key, ttl)
      end
      results[i] = 1
    else
      results[i] = 0
    end
  elseif current == false or current == owner then
    if current == false then
      redis.call('set', key, owner, 'PX', ttl)
      unannounced[key] = nil
    else
      redis.call('pexpire', key, ttl)
    end
    results[i] = 1
    if fence_key then
      results[i] = propose(fence_key) or -2
    end
  else
    results[i] = 0
  end
end
for key, owner in pairs(unannounced) do
  redis.pcall('publish', 'redquorum:released:' .. key, owner)
end
return results
