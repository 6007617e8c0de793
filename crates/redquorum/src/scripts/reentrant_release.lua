-- Remove one hold; delete the key when the owner's last hold is gone.
-- KEYS[1] lock key; ARGV[1] hold field ("<owner>:<hold>").
-- Returns 1 when the hold was removed, 0 when it was not there.
if redis.call('type', KEYS[1]).ok ~= 'hash' then
  return 0
end
if redis.call('hdel', KEYS[1], ARGV[1]) == 0 then
  return 0
end
if redis.call('hlen', KEYS[1]) == 0 then
  redis.call('del', KEYS[1])
end
return 1
