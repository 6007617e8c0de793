-- Add a reader, unless a writer holds the lock or is waiting for it.
-- KEYS[1] readers (sorted set: reader token -> expiry, node time in ms);
-- KEYS[2] writer (string: writer token); KEYS[3] writer intent (string).
-- ARGV[1] reader token; ARGV[2] ttl in ms.
-- Returns 1 when the reader is recorded, 0 when a writer holds or waits.
-- Each reader has its own expiry (its score), so a crashed reader's hold
-- ends after its ttl even while other readers keep the set alive.
if redis.call('exists', KEYS[2]) == 1 or redis.call('exists', KEYS[3]) == 1 then
  return 0
end
local time = redis.call('time')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call('zremrangebyscore', KEYS[1], '-inf', now)
redis.call('zadd', KEYS[1], now + ttl, ARGV[1])
if redis.call('pttl', KEYS[1]) < ttl then
  redis.call('pexpire', KEYS[1], ttl)
end
return 1
