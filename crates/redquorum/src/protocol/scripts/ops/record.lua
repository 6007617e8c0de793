-- Every other operation, defined only when a call needs one.
local function full_operations()
  -- The live state of a lock key: its fields, `holds` (token -> expiry),
  -- `count`, `delays` (token -> ms), `meta` (token -> info) and `exists`;
  -- `plain` for a string record (one plain hold: see `promote`).
  -- Expired holds, an expired intent and a passed lock-delay are removed (an
  -- expired hold with a lock-delay leaves `blocked`); a key with nothing left
  -- is deleted (the lock is free).
  local function load(key)
    local flat = redis.pcall('hgetall', key)
    local state = { holds = {}, count = 0, delays = {}, meta = {} }
    if flat.err then
      -- Not a hash: a plain hold's string record (or not a lock at all).
      local token = redis.call('get', key)
      state.holds[token] = clock() + redis.call('pttl', key)
      state.kind, state.count, state.exists, state.plain = 'lock', 1, true, token
      return state
    end
    if #flat == 0 then
      return state
    end
    state.exists = true
    local now = clock()
    local expiries = {}
    for i = 1, #flat, 2 do
      local field, value = flat[i], flat[i + 1]
      local prefix, token = string.sub(field, 1, 2), string.sub(field, 3)
      if prefix == 'h:' then
        expiries[token] = tonumber(value)
      elseif prefix == 'd:' then
        state.delays[token] = tonumber(value)
      elseif prefix == 'm:' then
        state.meta[token] = value
      elseif prefix == 'f:' then
        -- The committed fencing token: only inspect reads it.
      else
        state[field] = value
      end
    end
    if not state.kind then
      error('lock key ' .. key .. ' holds a hash that is not a lock')
    end
    local dead = {}
    local was_blocked = tonumber(state.blocked)
    local blocked, blocked_by = was_blocked or 0, nil
    for token, expiry in pairs(expiries) do
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

