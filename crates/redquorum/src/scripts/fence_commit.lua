-- Remember the chosen fencing token (second round of fencing: write-back).
-- KEYS[1] fence key; ARGV[1] the token chosen from a quorum's proposals.
-- Raises the stored value to the token, never lowers it. Returns 1.
-- After a quorum answered, every later quorum contains a node that will
-- propose above this token.
local token = tonumber(ARGV[1])
local stored = redis.call('get', KEYS[1])
if stored ~= false then
  stored = tonumber(stored)
  if stored == nil then
    return redis.error_reply('ERR fence key ' .. KEYS[1] .. ' does not hold a number')
  end
end
if stored == false or stored < token then
  redis.call('set', KEYS[1], ARGV[1], 'PX', 86400000)
else
  redis.call('pexpire', KEYS[1], 86400000)
end
return 1
