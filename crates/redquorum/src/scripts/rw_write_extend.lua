-- Renew the write lock's expiry if it still holds our token (owner-checked).
-- KEYS[1] writer; ARGV[1] writer token; ARGV[2] ttl in ms.
-- Returns 1 when extended, 0 when absent or not ours.
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
