-- Take the write lock if no reader or other writer holds it.
-- KEYS[1] readers; KEYS[2] writer; KEYS[3] writer intent.
-- ARGV[1] writer token; ARGV[2] ttl in ms.
-- Returns 1 when the writer key holds our token, 0 otherwise.
-- While live readers remain, record our intent (if no other writer's is
-- there): new readers are then refused, so the current ones drain and a
-- stream of readers cannot starve the writer.
local writer = redis.call('get', KEYS[2])
if writer then
  if writer == ARGV[1] then
    redis.call('pexpire', KEYS[2], ARGV[2])
    return 1
  end
  return 0
end
local time = redis.call('time')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('zremrangebyscore', KEYS[1], '-inf', now)
local intent = redis.call('get', KEYS[3])
if redis.call('zcard', KEYS[1]) > 0 then
  if not intent or intent == ARGV[1] then
    redis.call('set', KEYS[3], ARGV[1], 'PX', ARGV[2])
  end
  return 0
end
if intent and intent ~= ARGV[1] then
  return 0
end
redis.call('set', KEYS[2], ARGV[1], 'PX', ARGV[2])
if intent then
  redis.call('del', KEYS[3])
end
return 1
