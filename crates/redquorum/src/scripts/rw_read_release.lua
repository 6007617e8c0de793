-- Remove one reader; delete the set when it is empty.
-- KEYS[1] readers; ARGV[1] reader token.
-- Returns 1 when the reader was removed, 0 when it was not there.
if redis.call('zrem', KEYS[1], ARGV[1]) == 0 then
  return 0
end
if redis.call('zcard', KEYS[1]) == 0 then
  redis.call('del', KEYS[1])
end
return 1
