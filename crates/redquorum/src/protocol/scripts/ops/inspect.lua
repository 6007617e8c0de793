  -- Inspect, read-only: KEYS lock, fence. Returns { kind, owner, intent,
  -- fence counter, pttl, lock-delay ms left, then per live hold: token, ms
  -- left, owner information, committed fencing token } with '' for what is
  -- absent.
  ops[OP_INSPECT] = function(keys, _)
    local lock, fence = keys[1], keys[2]
    local flat = redis.pcall('hgetall', lock)
    local fields, expiries, meta, delays, fencings = {}, {}, {}, {}, {}
    local now = clock()
    if flat.err then
      -- A plain hold's string record.
      fields.kind = 'lock'
      expiries[redis.call('get', lock)] = redis.call('pttl', lock)
      flat = {}
    end
    for i = 1, #flat, 2 do
      local field, value = flat[i], flat[i + 1]
      local prefix, token = string.sub(field, 1, 2), string.sub(field, 3)
      if prefix == 'h:' then
        expiries[token] = tonumber(value) - now
      elseif prefix == 'm:' then
        meta[token] = value
      elseif prefix == 'd:' then
        delays[token] = tonumber(value)
      elseif prefix == 'f:' then
        fencings[token] = value
      else
        fields[field] = value
      end
    end
    -- As load() would see it: an expired hold with a lock-delay blocks.
    local blocked_until = tonumber(fields.blocked) or 0
    for token, left in pairs(expiries) do
      if left <= 0 and delays[token] then
        blocked_until = math.max(blocked_until, now + left + delays[token])
      end
    end
    local counter = redis.pcall('get', fence)
    if type(counter) ~= 'string' then
      counter = ''
    end
    local blocked = math.max(0, blocked_until - now)
    local answer = {
      fields.kind or '', fields.owner or '', fields.intent or '', counter,
      redis.call('pttl', lock), blocked,
    }
    for token, left in pairs(expiries) do
      if left > 0 then
        answer[#answer + 1] = token
        answer[#answer + 1] = left
        answer[#answer + 1] = meta[token] or ''
        answer[#answer + 1] = fencings[token] or ''
      end
    end
    return answer
  end

  return ops
end

