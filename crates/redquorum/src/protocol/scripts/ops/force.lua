  -- A force-release's first round, read-only: KEYS lock. Returns what it
  -- may remove, as found here: 'h:' .. token per hold (live or expired, a
  -- plain hold's too), 'intent:' .. a waiting writer's token, 'blocked:'
  -- .. a recorded lock-delay's end.
  ops[OP_FORCE_READ] = function(keys, _)
    local lock = keys[1]
    local flat = redis.pcall('hgetall', lock)
    if flat.err then
      local token = redis.pcall('get', lock)
      return type(token) == 'string' and { 'h:' .. token } or {}
    end
    local found = {}
    for i = 1, #flat, 2 do
      local field, value = flat[i], flat[i + 1]
      if string.sub(field, 1, 2) == 'h:' then
        found[#found + 1] = field
      elseif field == 'intent' or field == 'blocked' then
        found[#found + 1] = field .. ':' .. value
      end
    end
    return found
  end

  -- A force-release's second round: KEYS lock, fence; ARGV what the first
  -- round found on any node (OP_FORCE_READ). Removes those of them still here, and
  -- only those: sent late (to a node that was away, and lands when it comes
  -- back), it cannot oust a holder that came after it. A lock-delay goes if
  -- it was found, or if the hold whose delay it is was (an acquire may have
  -- turned that expired hold into it meanwhile). Returns the fence
  -- counter's proposal (the third round stores the highest, so a token of
  -- the ousted holders is below every later one).
  ops[OP_FORCE_RELEASE] = function(keys, args)
    local lock, fence = keys[1], keys[2]
    local found = {}
    for _, entry in ipairs(args) do
      found[entry] = true
    end
    local freed = false
    local flat = redis.pcall('hgetall', lock)
    if flat.err then
      local token = redis.pcall('get', lock)
      if type(token) == 'string' and found['h:' .. token] then
        freed = redis.call('del', lock) == 1
      end
    else
      local fields = {}
      for i = 1, #flat, 2 do
        fields[flat[i]] = flat[i + 1]
      end
      for field, value in pairs(fields) do
        if string.sub(field, 1, 2) == 'h:' and found[field] then
          local token = string.sub(field, 3)
          redis.call('hdel', lock, field, 'm:' .. token, 'd:' .. token, 'f:' .. token)
          freed = true
        elseif field == 'intent' and found['intent:' .. value] then
          redis.call('hdel', lock, 'intent', 'intent-exp')
          freed = true
        elseif field == 'blocked'
          and (found['blocked:' .. value] or found['h:' .. (fields['blocked-by'] or '')]) then
          redis.call('hdel', lock, 'blocked', 'blocked-by')
          freed = true
        end
      end
      if freed then
        -- Deletes the record if nothing is left in it.
        load(lock)
      end
    end
    if freed then
      -- Tagged apart from any earlier force-release, whose tag waiters remember.
      announce[lock] = 'forced:' .. clock()
    end
    return ops[OP_PROPOSE]({ fence })
  end

