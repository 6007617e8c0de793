-- Release (owner-checked). KEYS lock_1 .. lock_n; ARGV token, drop ('1'
-- also drops this token's writer intent). Returns 1 when the hold was
-- removed (from any of the locks), 0 when it was not there. A lock that
-- becomes free, a permit given back, or a waiting writer giving up, is
-- announced. A clean release never starts a lock-delay.
ops[OP_RELEASE] = function(keys, args)
  local token = args[1]
  local removed_any = 0
  for i = 1, #keys do
    local lock = keys[i]
    local state = load(lock)
    local dropped = args[2] == '1' and state.intent == token
    if dropped then
      redis.call('hdel', lock, 'intent', 'intent-exp')
      state.intent = nil
    end
    local removed = state.holds[token] ~= nil
    if removed then
      removed_any = 1
      state.count = state.count - 1
    end
    if removed or dropped then
      if state.count == 0 and not state.intent and not state.blocked then
        redis.call('del', lock)
      elseif removed then
        redis.call('hdel', lock, 'h:' .. token, 'm:' .. token, 'd:' .. token, 'f:' .. token)
      end
      if state.count == 0 or dropped or state.kind == 'permit' then
        announce[lock] = token
      end
    end
  end
  return removed_any
end

-- Commit a fencing token (the write-back), owner-checked: KEYS lock_1 ..
-- lock_n, then fence_1 .. fence_f; ARGV token, the fencing token (decimal),
-- n. Raises each counter to the fencing token, never lowers it, and notes
-- the token in the hold (f:<token>), while the hold is live on every lock;
-- returns 1, or 0 when it is not (then nothing is written).
ops[OP_COMMIT] = function(keys, args)
  local token, n = args[1], tonumber(args[3])
  local states = {}
  for i = 1, n do
    states[i] = load(keys[i])
    if not states[i].holds[token] then
      return 0
    end
  end
  for i = 1, n do
    promote(keys[i], states[i])
    redis.call('hset', keys[i], 'f:' .. token, args[2])
  end
  for i = n + 1, #keys do
    raise(keys[i], args[2])
  end
  return 1
end

-- Propose a fencing token for a holder (owner-checked, read-only): KEYS
-- lock_1 .. lock_n, then fence_1 .. fence_f; ARGV token, n. While the hold
-- is live on every lock, the highest proposal of the counters; 0 when it is
-- not. Nothing is stored: only a write-back raises a counter, and a node
-- answers only while our hold is there, so after any earlier holder's
-- write-back on it (docs/fencing.md, "Tokens on demand").
ops[OP_PROPOSE] = function(keys, args)
  local token, n = args[1], tonumber(args[2])
  for i = 1, n do
    if not load(keys[i]).holds[token] then
      return 0
    end
  end
  local highest, bad = highest_of(peek, keys, n + 1, #keys)
  if not highest then
    error('fence key ' .. bad .. ' does not hold a number')
  end
  return highest
end

-- Set a hold's owner information (owner-checked), and announce it (a
-- leader's new value wakes its observers): KEYS lock; ARGV token, meta.
-- Returns 1, or 0 when the hold is gone.
ops[OP_SET_META] = function(keys, args)
  local lock, token = keys[1], args[1]
  local state = load(lock)
  if not state.holds[token] then
    return 0
  end
  promote(lock, state)
  redis.call('hset', lock, 'm:' .. token, args[2])
  -- Tagged with the value: each node's copy of one change wakes once.
  news[lock] = '~' .. token .. ':' .. args[2]
  return 1
end

