
-- A hold handed over (a lease ticket adopted: `move`) or asked to be
-- (`ask`).

-- Moves `from`'s live hold on `lock` (a lock of `kind`) to `to`, with its
-- owner information, lock-delay, committed fencing token (and a waiting
-- writer's intent), lasting `ttl` from now, or, with `ttl` nil, keeping
-- its expiry but no more than `cap` ms from now; `from` holds nothing
-- after. Returns 1 moved (or moved already: `to` holds, refreshed as by an
-- extend when `ttl` is given), 0 when `from` does not hold here. A move
-- announces no release (the lock never became free), only `from`'s loss
-- (`lost`).
local function move(lock, from, to, ttl, kind, cap)
  local state = load(lock)
  if state.kind ~= kind then
    return 0
  end
  if state.plain then
    if state.plain ~= from and state.plain ~= to then
      return 0
    elseif state.plain == to and not ttl then
      return 1
    end
    redis.call('set', lock, to, 'PX', ttl or math.min(redis.call('pttl', lock), cap))
    lost[lock] = from
    return 1
  end
  if state.holds[to] then
    if ttl then
      hold(lock, to, ttl, state.delays[to])
    end
    return 1
  elseif not state.holds[from] then
    return 0
  end
  ttl = ttl or math.max(1, math.min(state.holds[from] - clock(), cap))
  redis.call('hdel', lock, 'h:' .. from, 'm:' .. from, 'd:' .. from, 'f:' .. from)
  local carried = { meta = 'm:', delays = 'd:', fencings = 'f:' }
  for field, prefix in pairs(carried) do
    local value = state[field][from]
    if value then
      redis.call('hset', lock, prefix .. to, value)
    end
  end
  if state.intent == from then
    redis.call('hset', lock, 'intent', to)
  end
  hold(lock, to, ttl, state.delays[from])
  lost[lock] = from
  return 1
end

-- Move a hold to a new owner (a lease ticket adopted: lease/ticket.rs),
-- owner-checked on the old token. KEYS lock; ARGV old token, new token,
-- ttl, kind. The old token's live hold becomes the new token's, lasting
-- ttl from now (`move`).
ops[OP_MOVE] = function(keys, args)
  return move(keys[1], args[1], args[2], tonumber(args[3]), args[4])
end

-- Move a failed adoption's hold back (`OP_MOVE` undone), owner-checked on
-- the adopter's token. KEYS lock; ARGV adopter token, old token, kind, cap
-- (ms: what the ticket said was left, as of now). The adopter's live hold
-- becomes the old token's again, keeping its expiry but no more than cap,
-- so another adoption of the same ticket may still take it; where the move
-- never landed, nothing changes (1).
ops[OP_MOVE_BACK] = function(keys, args)
  return move(keys[1], args[1], args[2], nil, args[3], tonumber(args[4]))
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
