-- Every operation but the plain ones on their string record, by code
-- (dispatch.lua runs them, finish.lua once they are defined).
local ops = {}

-- The plain lock's operations on a lock record (their string-record
-- version answered nil): the full acquire of one lock of kind 'lock'
-- (fenced when the fence key is given), release and extend.
ops[OP_PLAIN_ACQUIRE] = function(keys, args)
  local flags = keys[2] and 'p' or ''
  return ops[OP_ACQUIRE](keys, { args[1], args[2], '', flags, '', 0, #keys - 1, 'lock' })
end
ops[OP_PLAIN_RELEASE] = function(keys, args)
  return ops[OP_RELEASE](keys, { args[1], '1' })
end
ops[OP_PLAIN_EXTEND] = function(keys, args)
  return ops[OP_EXTEND](keys, args)
end

-- Acquire. KEYS lock_1 .. lock_n, then fence_1 .. fence_f (the fence
-- counters of the first f locks); ARGV token, ttl, group (the reentrant
-- owner id, or ''), flags ('p' propose a fencing token, 'i' record a
-- waiting writer's intent while readers hold), meta (owner information, or
-- ''), delay (lock-delay ms, 0 for none), f, then kind_1 .. kind_n.
-- All locks are taken or none. Returns 0 taken (by any kind, or blocked by
-- a lock-delay), 1 granted, P >= 1024 granted with the highest proposal P
-- of the fence counters, -2 granted but a fence key does not hold a number.
-- A token that already holds is granted again (refreshed), so a retried
-- acquire never reports itself as taken.
ops[OP_ACQUIRE] = function(keys, args)
  local token, ttl, group, flags, meta = args[1], tonumber(args[2]), args[3], args[4], args[5]
  local delay, fences = tonumber(args[6]), tonumber(args[7])
  local n = #args - 7
  local states = {}
  for i = 1, n do
    states[i] = load(keys[i])
  end
  for i = 1, n do
    local state = states[i]
    if not state.holds[token] and not fits(state, args[7 + i], token, group) then
      local waits = n == 1 and string.find(flags, 'i', 1, true)
      local mine = not state.intent or state.intent == token
      if waits and state.kind == 'read' and mine and not state.blocked then
        redis.call('hset', keys[1], 'intent', token, 'intent-exp', clock() + ttl)
        keep_for(keys[1], ttl)
      end
      return 0
    end
  end
  for i = 1, n do
    local lock, state, kind = keys[i], states[i], args[7 + i]
    if state.holds[token] or state.count > 0 then
      promote(lock, state)
      hold(lock, token, ttl, delay)
    else
      -- Free (or only our own intent left): a new record, in one write.
      if state.exists then
        redis.call('del', lock)
      end
      local fields = { 'kind', kind, 'h:' .. token, clock() + ttl }
      if kind == 'reentrant' then
        table.insert(fields, 'owner')
        table.insert(fields, group)
      end
      redis.call('hset', lock, unpack(fields))
      redis.call('pexpire', lock, ttl + delay)
    end
    if meta ~= '' then
      redis.call('hset', lock, 'm:' .. token, meta)
    end
    if delay > 0 then
      redis.call('hset', lock, 'd:' .. token, delay)
    end
    -- Taken again in this call: it was never free. A new leader is news
    -- (its observers wake).
    announce[lock] = nil
    if kind == 'leader' then
      news[lock] = '+' .. token
    end
  end
  if not string.find(flags, 'p', 1, true) then
    return 1
  end
  return highest_of(peek, keys, n + 1, n + fences) or -2
end

-- Extend (owner-checked). KEYS lock_1 .. lock_n; ARGV token, ttl. Returns 1
-- when the hold was live on every lock and now lasts ttl more, 0 when not.
ops[OP_EXTEND] = function(keys, args)
  local token, ttl = args[1], tonumber(args[2])
  local states = {}
  for i = 1, #keys do
    states[i] = load(keys[i])
    if not states[i].holds[token] then
      return 0
    end
  end
  for i = 1, #keys do
    promote(keys[i], states[i])
    hold(keys[i], token, ttl, states[i].delays[token])
  end
  return 1
end

