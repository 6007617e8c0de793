
-- A hold handed over (a lease ticket adopted: `move`) or asked to be
-- (`ask`).

-- Move a hold to a new owner (a lease ticket adopted: lease/ticket.rs),
-- owner-checked on the old token. KEYS lock; ARGV old token, new token,
-- ttl, kind. The old token's live hold, when the lock is of `kind`,
-- becomes the new token's, lasting ttl from now, with its owner
-- information, lock-delay and committed fencing token (and a waiting
-- writer's intent); the old token holds nothing after. Returns 1 moved
-- (or moved already: the new token holds, refreshed as by an extend), 0
-- when the old token does not hold here. A move announces no release (the
-- lock never became free), only the old holder's loss (`lost`).
ops[OP_MOVE] = function(keys, args)
  local lock, old, new, ttl, kind = keys[1], args[1], args[2], tonumber(args[3]), args[4]
  local state = load(lock)
  if state.kind ~= kind then
    return 0
  end
  if state.plain then
    if state.plain ~= old and state.plain ~= new then
      return 0
    end
    redis.call('set', lock, new, 'PX', ttl)
    lost[lock] = old
    return 1
  end
  if state.holds[new] then
    hold(lock, new, ttl, state.delays[new])
    return 1
  elseif not state.holds[old] then
    return 0
  end
  redis.call('hdel', lock, 'h:' .. old, 'm:' .. old, 'd:' .. old, 'f:' .. old)
  local carried = { meta = 'm:', delays = 'd:', fencings = 'f:' }
  for field, prefix in pairs(carried) do
    local value = state[field][old]
    if value then
      redis.call('hset', lock, prefix .. new, value)
    end
  end
  if state.intent == old then
    redis.call('hset', lock, 'intent', new)
  end
  hold(lock, new, ttl, state.delays[old])
  lost[lock] = old
  return 1
end

-- Ask the holders to let go (Redlock::ask_release): KEYS lock; ARGV tag.
-- Announces the tag on the lock's ask channel ('redquorum:released:' ..
-- key .. ':ask', wait/notify.rs), where its holders listen; changes
-- nothing. Returns 1 when the lock holds a live hold here, 0 when not.
ops[OP_ASK] = function(keys, args)
  local state = load(keys[1])
  redis.pcall(PUBLISH, 'redquorum:released:' .. keys[1] .. ':ask', args[1])
  return state.count > 0 and 1 or 0
end
