local out = {}
-- Fence counters (keys ending in the suffix): key, value, as read.
local counters = {}
local cursor = '0'
local suffix = ARGV[2]
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
repeat
  local page = redis.call('SCAN', cursor, 'MATCH', ARGV[1], 'COUNT', 1000)
  cursor = page[1]
  for _, key in ipairs(page[2]) do
    if suffix ~= '' and string.sub(key, -#suffix) == suffix then
      if redis.call('TYPE', key)['ok'] == 'string' then
        table.insert(counters, key)
        table.insert(counters, redis.call('GET', key))
      end
    else
      local kind = redis.call('TYPE', key)['ok']
      if kind == 'string' then
        table.insert(out, key)
        table.insert(out, redis.call('GET', key))
        table.insert(out, redis.call('PTTL', key))
      elseif kind == 'hash' then
        local flat = redis.call('HGETALL', key)
        -- A hold lives no longer than its record: the key's expiry bounds it.
        local keyleft = redis.call('PTTL', key)
        for i = 1, #flat, 2 do
          if string.sub(flat[i], 1, 2) == 'h:' then
            local left = (tonumber(flat[i + 1]) or 0) - now
            if keyleft >= 0 and keyleft < left then
              left = keyleft
            end
            if left > 0 then
              table.insert(out, key)
              table.insert(out, string.sub(flat[i], 3))
              table.insert(out, left)
            end
          end
        end
      end
    end
  end
until cursor == '0'
return {out, counters}
