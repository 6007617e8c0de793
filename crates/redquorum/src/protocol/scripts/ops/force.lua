-- A force-release's first round, read-only: KEYS lock. Returns what it
-- may remove, as found here: 'h:' .. token per hold (live or expired, a
-- plain hold's too), 'intent:' .. a waiting writer's token, 'blocked:'
-- .. a recorded lock-delay's end.
ops[OP_FORCE_READ] = function(keys, _)
  local record = read(keys[1])
  local found = {}
  if not record then
    return found
  end
  for token in pairs(record.expiries) do
    found[#found + 1] = 'h:' .. token
  end
  if record.intent then
    found[#found + 1] = 'intent:' .. record.intent
  end
  if record.blocked then
    found[#found + 1] = 'blocked:' .. record.blocked
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
  local record = read(lock)
  if record and record.plain then
    if found['h:' .. record.plain] then
      freed = redis.call('del', lock) == 1
    end
  elseif record then
    for token in pairs(record.expiries) do
      if found['h:' .. token] then
        redis.call('hdel', lock, 'h:' .. token, 'm:' .. token, 'd:' .. token, 'f:' .. token)
        freed = true
      end
    end
    if record.intent and found['intent:' .. record.intent] then
      redis.call('hdel', lock, 'intent', 'intent-exp')
      freed = true
    end
    local blocked = record.blocked
    if blocked and (found['blocked:' .. blocked] or found['h:' .. (record['blocked-by'] or '')]) then
      redis.call('hdel', lock, 'blocked', 'blocked-by')
      freed = true
    end
    if freed then
      -- Deletes the record if nothing is left in it.
      load(lock)
    end
  end
  if freed then
    -- Tagged apart from any earlier force-release, whose tag waiters remember.
    announce[lock] = 'forced:' .. clock()
    lost[lock] = announce[lock]
  end
  local proposal = propose(fence)
  if not proposal then
    error('fence key ' .. fence .. ' does not hold a number')
  end
  return proposal
end

