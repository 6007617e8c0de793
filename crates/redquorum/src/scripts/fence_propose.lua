-- Propose the next fencing token for a resource (first round of fencing).
-- KEYS[1] fence key. No ARGV.
-- Returns max(stored + 1, node_time_ms * 1024) and stores it, so proposals
-- from this node strictly increase, and a node that lost the key (restart
-- without persistence) still proposes above every token issued earlier
-- while its clock was behind now. 1024 proposals per millisecond fit before
-- the counter part runs ahead of the clock; values stay below 2^53, so Lua's
-- doubles hold them exactly (until the year 2248).
-- The key expires 24 h after its last use, so idle resources cost no memory;
-- an expired key is the same case as a node that lost its data, and the
-- node-time part keeps proposals above every earlier token (docs/fencing.md).
local stored = redis.call('get', KEYS[1])
if stored == false then
  stored = 0
else
  stored = tonumber(stored)
  if stored == nil then
    return redis.error_reply('ERR fence key ' .. KEYS[1] .. ' does not hold a number')
  end
end
local time = redis.call('time')
local now_ms = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local proposal = math.max(stored + 1, now_ms * 1024)
redis.call('set', KEYS[1], string.format('%.0f', proposal), 'PX', 86400000)
return proposal
