-- Renew one reader's expiry if it is still recorded and not expired.
-- KEYS[1] readers; ARGV[1] reader token; ARGV[2] ttl in ms.
-- Returns 1 when extended, 0 when the reader is gone.
local time = redis.call('time')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call('zremrangebyscore', KEYS[1], '-inf', now)
if not redis.call('zscore', KEYS[1], ARGV[1]) then
  return 0
end
redis.call('zadd', KEYS[1], 'XX', now + ttl, ARGV[1])
if redis.call('pttl', KEYS[1]) < ttl then
  redis.call('pexpire', KEYS[1], ttl)
end
return 1
