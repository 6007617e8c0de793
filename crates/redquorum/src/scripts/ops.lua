-- Every lock operation of every kind, one or several per call (group
-- commit: see batcher.rs). For operation i, ARGV holds its code, its key
-- count and its argument count, then its arguments; its keys follow in
-- KEYS, in order. Each operation runs in its own pcall: one that fails (a
-- key of another type, OOM) answers its own error and the others still run.
-- The answer is one entry per operation:
--   an integer or an array: the operation's result (below);
--   the string 'E<message>': the operation failed with that error.
--
-- One resource is one lock, whatever its kind: a hash at its lock key.
--   kind        'lock' | 'write' | 'read' | 'reentrant'
--   owner       reentrant only: the owner id that all its holds share
--   h:<token>   one per hold: its expiry, in node time (ms)
--   intent      read only: a waiting writer's token (new readers wait);
--   intent-exp  its expiry
-- The key's own expiry is never before the latest of these, so the key goes
-- when the last hold expires; expired holds are removed as they are seen.
-- Kinds exclude each other; only readers share, and the holds of one
-- reentrant owner. The fence counter is a number at the fence key.

local now_ms
-- Node time in ms, read once per call.
local function clock()
  if not now_ms then
    local time = redis.call('time')
    now_ms = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  end
  return now_ms
end

-- The live state of a lock key: its fields, `holds` (token -> true),
-- `count`, and `exists` (the key is there). Expired holds and an expired
-- intent are removed; a key with nothing live left is deleted (the lock is
-- free).
local function load(key)
  local flat = redis.call('hgetall', key)
  local state = { holds = {}, count = 0 }
  if #flat == 0 then
    return state
  end
  state.exists = true
  local now = clock()
  local dead = {}
  for i = 1, #flat, 2 do
    local field, value = flat[i], flat[i + 1]
    if string.sub(field, 1, 2) == 'h:' then
      if tonumber(value) > now then
        state.holds[string.sub(field, 3)] = true
        state.count = state.count + 1
      else
        dead[#dead + 1] = field
      end
    else
      state[field] = value
    end
  end
  if not state.kind then
    error('lock key ' .. key .. ' holds a hash that is not a lock')
  end
  if state.intent and tonumber(state['intent-exp']) <= now then
    dead[#dead + 1] = 'intent'
    dead[#dead + 1] = 'intent-exp'
    state.intent = nil
  end
  if state.count == 0 and not state.intent then
    redis.call('del', key)
    return { holds = {}, count = 0 }
  end
  if #dead > 0 then
    redis.call('hdel', key, unpack(dead))
  end
  return state
end

-- Never shorten the key's expiry: other holds may outlive this one.
local function keep_for(key, ttl)
  if redis.call('pttl', key) < tonumber(ttl) then
    redis.call('pexpire', key, ttl)
  end
end

local function hold(key, token, ttl)
  redis.call('hset', key, 'h:' .. token, clock() + tonumber(ttl))
  keep_for(key, ttl)
end

-- Whether a new hold of `kind` may join the lock's live holds.
local function fits(state, kind, token, group)
  if state.intent and state.intent ~= token then
    return false -- a waiting writer goes next
  end
  if state.count == 0 then
    return true
  end
  if kind == 'read' then
    return state.kind == 'read'
  end
  return kind == 'reentrant' and state.kind == 'reentrant' and state.owner == group
end

-- The fence counter's next proposal, max(stored + 1, node_ms * 1024),
-- stored; nil if the fence key does not hold a number. Proposals from one
-- node strictly increase, and a node that lost the key (a restart without
-- persistence, or 24 h idle) still proposes above every token issued while
-- its clock was behind now (docs/fencing.md). Below 2^53 until the year
-- 2248, so Lua's doubles hold them exactly.
local function propose(fence)
  local stored = redis.pcall('get', fence)
  if type(stored) == 'table' then
    return nil
  end
  stored = stored == false and 0 or tonumber(stored)
  if stored == nil then
    return nil
  end
  local proposal = math.max(stored + 1, clock() * 1024)
  redis.call('set', fence, string.format('%.0f', proposal), 'PX', 86400000)
  return proposal
end

local released = {} -- lock key -> token, announced at the end of the call

-- The answer of a granted acquire: 1, or with the 'p' flag the fencing
-- proposal (-2 when the fence key does not hold a number).
local function granted(lock, fence, flags)
  released[lock] = nil -- taken again in this call: it was never free
  if string.find(flags, 'p', 1, true) then
    return propose(fence) or -2
  end
  return 1
end

local ops = {}

-- Acquire. KEYS lock, fence; ARGV kind, token, ttl, group (reentrant owner
-- id, or ''), flags ('p' propose a fencing token, 'i' record a waiting
-- writer's intent while readers hold). Returns 0 taken (by any kind), 1
-- granted, P >= 1024 granted with proposal P, -2 granted but the fence key
-- does not hold a number. A token that already holds is granted again
-- (refreshed), so a retried acquire never reports itself as taken.
function ops.a(keys, args)
  local lock, fence = keys[1], keys[2]
  local kind, token, ttl, group, flags = args[1], args[2], args[3], args[4], args[5]
  local state = load(lock)
  if not state.holds[token] then
    if not fits(state, kind, token, group) then
      local waits = string.find(flags, 'i', 1, true)
      if waits and state.kind == 'read' and (not state.intent or state.intent == token) then
        redis.call('hset', lock, 'intent', token, 'intent-exp', clock() + tonumber(ttl))
        keep_for(lock, ttl)
      end
      return 0
    end
    if state.count == 0 then
      -- Free (or only our own intent left): a new record, in one write.
      if state.exists then
        redis.call('del', lock)
      end
      local expiry = clock() + tonumber(ttl)
      if kind == 'reentrant' then
        redis.call('hset', lock, 'kind', kind, 'owner', group, 'h:' .. token, expiry)
      else
        redis.call('hset', lock, 'kind', kind, 'h:' .. token, expiry)
      end
      redis.call('pexpire', lock, ttl)
      return granted(lock, fence, flags)
    end
  end
  hold(lock, token, ttl)
  return granted(lock, fence, flags)
end

-- Extend (owner-checked). KEYS lock; ARGV token, ttl. Returns 1 when the
-- hold was live and now lasts ttl more, 0 when it is gone.
function ops.e(keys, args)
  local lock = keys[1]
  if not load(lock).holds[args[1]] then
    return 0
  end
  hold(lock, args[1], args[2])
  return 1
end

-- Release (owner-checked). KEYS lock; ARGV token, drop ('1' also drops this
-- token's writer intent). Returns 1 when the hold was removed, 0 when it was
-- not there. When the lock becomes free, or a waiting writer gives up, the
-- release is announced on 'redquorum:released:' .. lock (notify.rs), so
-- waiters wake without polling.
function ops.r(keys, args)
  local lock, token = keys[1], args[1]
  local state = load(lock)
  local dropped = args[2] == '1' and state.intent == token
  if dropped then
    redis.call('hdel', lock, 'intent', 'intent-exp')
    state.intent = nil
  end
  local removed = state.holds[token] and 1 or 0
  if removed == 0 and not dropped then
    return 0
  end
  if removed == 1 then
    state.count = state.count - 1
  end
  if state.count == 0 and not state.intent then
    redis.call('del', lock)
  elseif removed == 1 then
    redis.call('hdel', lock, 'h:' .. token)
  end
  if state.count == 0 or dropped then
    released[lock] = token
  end
  return removed
end

-- Commit a fencing token (the write-back), owner-checked: KEYS lock,
-- fence; ARGV token, the fencing token (decimal). Raises the counter to the
-- fencing token, never lowers it, while the hold is live; returns 1, or 0
-- when the hold is gone (then nothing is written).
function ops.c(keys, args)
  local lock, fence = keys[1], keys[2]
  if not load(lock).holds[args[1]] then
    return 0
  end
  local token = tonumber(args[2])
  local stored = redis.call('get', fence)
  if stored ~= false then
    stored = tonumber(stored)
    if stored == nil then
      error('fence key ' .. fence .. ' does not hold a number')
    end
  end
  if stored == false or stored < token then
    redis.call('set', fence, args[2], 'PX', 86400000)
  else
    redis.call('pexpire', fence, 86400000)
  end
  return 1
end

-- Propose a fencing token on its own (when the acquire could not): KEYS
-- fence. Returns the proposal.
function ops.p(keys, _)
  local proposal = propose(keys[1])
  if not proposal then
    error('fence key ' .. keys[1] .. ' does not hold a number')
  end
  return proposal
end

-- Inspect, read-only: KEYS lock, fence. Returns { kind, owner, intent,
-- fence counter, pttl, token1, ms left1, token2, ms left2, ... } with ''
-- for what is absent; holds already expired are left out.
function ops.i(keys, _)
  local lock, fence = keys[1], keys[2]
  local flat = redis.call('hgetall', lock)
  local fields, holds = {}, {}
  local now = clock()
  for i = 1, #flat, 2 do
    local field, value = flat[i], flat[i + 1]
    if string.sub(field, 1, 2) == 'h:' then
      local left = tonumber(value) - now
      if left > 0 then
        holds[#holds + 1] = string.sub(field, 3)
        holds[#holds + 1] = left
      end
    else
      fields[field] = value
    end
  end
  local counter = redis.pcall('get', fence)
  if type(counter) ~= 'string' then
    counter = ''
  end
  local answer = {
    fields.kind or '', fields.owner or '', fields.intent or '', counter, redis.call('pttl', lock),
  }
  for _, item in ipairs(holds) do
    answer[#answer + 1] = item
  end
  return answer
end

local answers = {}
local next_arg, next_key = 1, 1
while next_arg <= #ARGV do
  local code = ARGV[next_arg]
  local key_count, arg_count = tonumber(ARGV[next_arg + 1]), tonumber(ARGV[next_arg + 2])
  local op_keys = { unpack(KEYS, next_key, next_key + key_count - 1) }
  local op_args = { unpack(ARGV, next_arg + 3, next_arg + 2 + arg_count) }
  next_arg = next_arg + 3 + arg_count
  next_key = next_key + key_count
  local run = ops[code]
  local ok, answer
  if run then
    ok, answer = pcall(run, op_keys, op_args)
  else
    ok, answer = false, 'unknown operation ' .. tostring(code)
  end
  if ok then
    answers[#answers + 1] = answer
  elseif type(answer) == 'table' and answer.err then
    answers[#answers + 1] = 'E' .. answer.err
  else
    answers[#answers + 1] = 'E' .. tostring(answer)
  end
end
for lock, token in pairs(released) do
  -- Best effort: an ACL user without the channel permission still releases.
  redis.pcall('publish', 'redquorum:released:' .. lock, token)
end
return answers
