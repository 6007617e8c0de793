-- The plain lock's release alone on a connection (protocol/alone.rs): the
-- lock script's plain release without the script's preamble (defining its
-- operations costs a node more than the release itself). KEYS lock; ARGV
-- token. Owner-checked compare-and-delete of the string record, announced
-- on the lock's channel as the lock script announces a release
-- (wait/notify.rs). Returns 1 removed, 0 not there, -1 a lock record there
-- (a hash: the lock script's release decides; nothing was written).
local holder = redis.pcall('get', KEYS[1])
if type(holder) == 'table' then
  return -1
elseif holder ~= ARGV[1] then
  return 0
end
redis.call('del', KEYS[1])
redis.pcall('publish', 'redquorum:released:' .. KEYS[1], ARGV[1])
return 1
