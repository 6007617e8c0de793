-- Delete the write lock if it holds our token; optionally drop our intent.
-- KEYS[1] writer; KEYS[2] writer intent.
-- ARGV[1] writer token; ARGV[2] "1" to also delete our intent ("0" keeps it,
-- between the attempts of one waiting writer).
-- Returns 1 when our writer key was deleted, 0 otherwise.
if ARGV[2] == '1' and redis.call('get', KEYS[2]) == ARGV[1] then
  redis.call('del', KEYS[2])
end
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0
