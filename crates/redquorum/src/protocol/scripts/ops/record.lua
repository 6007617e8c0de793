-- Every other operation, defined only when a call needs one (the script
-- gets here from dispatch.lua): the lock record first.

-- The one parser of a lock key: its record as stored, nothing removed.
-- The hash's own fields (`kind`, `owner`, `intent`, `intent-exp`,
-- `blocked`, `blocked-by`) as they are, and per hold: `expiries` (token ->
-- node time, live or not), `delays` (token -> ms), `meta` (token -> info),
-- `fencings` (token -> committed fencing token); `exists`. A plain hold's
-- string record reads as one hold of kind 'lock', `plain` its token.
-- nil and the error when the key holds neither (not a lock).
local function read(key)
  local record = { expiries = {}, delays = {}, meta = {}, fencings = {} }
  local flat = redis.pcall('hgetall', key)
  if flat.err then
    local token = redis.pcall('get', key)
    if type(token) ~= 'string' then
      return nil, token
    end
    record.expiries[token] = clock() + redis.call('pttl', key)
    record.kind, record.plain, record.exists = 'lock', token, true
    return record
  end
  record.exists = #flat > 0
  for i = 1, #flat, 2 do
    local field, value = flat[i], flat[i + 1]
    local prefix, token = string.sub(field, 1, 2), string.sub(field, 3)
    if prefix == 'h:' then
      record.expiries[token] = tonumber(value)
    elseif prefix == 'd:' then
      record.delays[token] = tonumber(value)
    elseif prefix == 'm:' then
      record.meta[token] = value
    elseif prefix == 'f:' then
      record.fencings[token] = value
    else
      record[field] = value
    end
  end
  return record
end

-- The live state of a lock key: its record (`read`) with `holds` (token ->
-- expiry, live ones only) and their `count`; `plain` for a string record
-- (one plain hold: see `promote`). Expired holds, an expired intent and a
-- passed lock-delay are removed (an expired hold with a lock-delay leaves
-- `blocked`); a key with nothing left is deleted (the lock is free).
local function load(key)
  local state, err = read(key)
  if not state then
    error(err)
  end
  state.holds, state.count = {}, 0
  if state.plain then
    state.holds[state.plain], state.count = state.expiries[state.plain], 1
    return state
  end
  if not state.exists then
    return state
  end
  local now = clock()
  if not state.kind then
    error('lock key ' .. key .. ' holds a hash that is not a lock')
  end
  local dead = {}
  local was_blocked = tonumber(state.blocked)
  local blocked, blocked_by = was_blocked or 0, nil
  for token, expiry in pairs(state.expiries) do
    if expiry > now then
      state.holds[token] = expiry
      state.count = state.count + 1
    else
      -- Expired, not released: the holder vanished. Its lock-delay starts.
      local ends = expiry + (state.delays[token] or 0)
      if ends > blocked then
        blocked, blocked_by = ends, token
      end
      dead[#dead + 1] = 'h:' .. token
      dead[#dead + 1] = 'm:' .. token
      dead[#dead + 1] = 'd:' .. token
      dead[#dead + 1] = 'f:' .. token
    end
  end
  if state.intent and tonumber(state['intent-exp']) <= now then
    dead[#dead + 1] = 'intent'
    dead[#dead + 1] = 'intent-exp'
    state.intent = nil
  end
  state.blocked = blocked > now and blocked or nil
  if state.count == 0 and not state.intent and not state.blocked then
    redis.call('del', key)
    return { holds = {}, count = 0, delays = {}, meta = {} }
  end
  if #dead > 0 then
    redis.call('hdel', key, unpack(dead))
  end
  if state.blocked and state.blocked ~= was_blocked then
    -- Only an expired hold raises it: its token says whose delay it is
    -- (a force-release that found that hold clears it).
    redis.call('hset', key, 'blocked', state.blocked, 'blocked-by', blocked_by)
  elseif was_blocked and not state.blocked then
    redis.call('hdel', key, 'blocked', 'blocked-by')
  end
  return state
end

-- A plain hold's string record (`load`'s `state`) as the same hold in a
-- lock record, for an operation that writes fields of it.
local function promote(key, state)
  local token = state.plain
  if token then
    local left = redis.call('pttl', key)
    redis.call('del', key)
    redis.call('hset', key, 'kind', 'lock', 'h:' .. token, clock() + left)
    redis.call('pexpire', key, left)
    state.plain = nil
  end
end

-- Never shorten the key's expiry: other holds may outlive this one.
local function keep_for(key, ms)
  if redis.call('pttl', key) < ms then
    redis.call('pexpire', key, ms)
  end
end

-- (Re)sets a hold's expiry; a hold with a lock-delay keeps the key that
-- much longer, so the delay is seen when it expires.
local function hold(key, token, ttl, delay)
  redis.call('hset', key, 'h:' .. token, clock() + ttl)
  keep_for(key, ttl + (delay or 0))
end

-- Whether a new hold of `kind` may join the lock's live holds.
local function fits(state, kind, token, group)
  if state.blocked then
    return false -- a lock-delay after an unclean loss
  end
  if state.intent and state.intent ~= token then
    return false -- a waiting writer goes next
  end
  if state.count == 0 then
    return true
  end
  if kind == 'read' or kind == 'permit' then
    return state.kind == kind
  end
  return kind == 'reentrant' and state.kind == 'reentrant' and state.owner == group
end

