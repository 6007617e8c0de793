-- Single-server form (node/script.rs): releases and news are announced by
-- PUBLISH.
local PUBLISH = 'publish'

-- Every lock operation of every kind, one or several per call (group
-- commit: see node/batcher.rs). For operation i, ARGV holds its code, its key
-- count and its argument count, then its arguments; its keys follow in
-- KEYS, in order. Each operation runs in its own pcall: one that fails (a
-- key of another type, OOM) answers its own error and the others still run.
-- The answer is one entry per operation:
--   an integer or an array: the operation's result (below);
--   the string 'E<message>': the operation failed with that error.
--
-- One resource is one lock, whatever its kind, at its lock key: either a
-- string, the record of one plain hold (no owner information, lock-delay or
-- owner group): its value the hold's token, its expiry the hold's; or a
-- hash, the record of every other hold:
--   kind        'lock' | 'write' | 'read' | 'reentrant' | 'permit' | 'slot'
--               | 'leader'
--   owner       reentrant only: the owner id that all its holds share
--   h:<token>   one per hold: its expiry, in node time (ms)
--   m:<token>   the hold's owner information (host:pid:note), if given
--   d:<token>   the hold's lock-delay in ms, if it has one
--   f:<token>   the hold's fencing token, once committed (what an observer
--               reads as a leader's epoch)
--   intent      read only: a waiting writer's token (new readers wait);
--   intent-exp  its expiry
--   blocked     a lock-delay: no new hold before this node time (ms)
--   blocked-by  the token of the vanished hold whose delay set it
-- The key's own expiry is never before the latest of these, so the key goes
-- when nothing is left; expired holds are removed as they are seen, and a
-- hold with a lock-delay that expires (its holder vanished without
-- releasing) blocks the lock for that delay. Kinds exclude each other;
-- only readers share, semaphore permits share (their slots, each an
-- exclusive 'slot' record, cap them), and the holds of one reentrant owner.
-- The fence counter is a number at the fence key.
--
-- The script is joined at build time (node/script.rs) from its parts, in
-- this order: ops/prelude.lua (this file: the call, the records, the clock
-- and the fence proposal), the operation codes (protocol/op.rs), answer.lua
-- (the answer and the announcements), plain.lua (the plain lock's
-- operations), dispatch.lua (the one dispatcher; a call of plain operations
-- only ends there), record.lua (the one parser of a lock key and the
-- record's helpers), fence.lua, hold.lua (acquire, extend), release.lua
-- (release, commit, propose, owner information), force.lua, inspect.lua,
-- finish.lua (the rest of a call that needed them).
--
-- The plain lock's operations (OP_PLAIN_*) run first, on a string record,
-- before the other operations are even defined (most calls are theirs, and
-- defining the rest costs more than they do); one that finds a hash at its
-- key leaves it to the full operation (OP_ACQUIRE, OP_RELEASE, OP_EXTEND),
-- which reads both records. The codes are protocol/op.rs's (`Code`), joined
-- in after this file.
--
-- An acquire, extend, release or commit can act on several locks at once
-- (a multi-resource lock, a permit and its slot): all or nothing on each
-- node.

local now_ms
-- Node time in ms, read once per call.
local function clock()
  if not now_ms then
    local time = redis.call('time')
    now_ms = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  end
  return now_ms
end


-- The fence counter's next proposal, max(stored + 1, node_ms * 1024), NOT
-- stored (an acquire's proposal; the write-back stores the token, see
-- docs/fencing.md); nil if the fence key does not hold a number. A node
-- that lost the key (a restart without persistence, or 24 h idle) still
-- proposes above every token issued while its clock was behind now. Below
-- 2^53 until the year 2248, so Lua's doubles hold them exactly.
local function peek(fence)
  local stored = redis.pcall('get', fence)
  if type(stored) == 'table' then
    return nil
  end
  stored = stored == false and 0 or tonumber(stored)
  if stored == nil then
    return nil
  end
  return math.max(stored + 1, clock() * 1024)
end

-- The operation codes (protocol/op.rs, `code_table`).
local OP_ACQUIRE = 'a'
local OP_EXTEND = 'e'
local OP_RELEASE = 'r'
local OP_COMMIT = 'c'
local OP_PROPOSE = 'p'
local OP_SET_META = 'm'
local OP_FORCE_READ = 'g'
local OP_FORCE_RELEASE = 'f'
local OP_INSPECT = 'i'
local OP_PLAIN_ACQUIRE = 'l'
local OP_PLAIN_RELEASE = 'u'
local OP_PLAIN_EXTEND = 'n'

-- Lock key -> tag: announced at the end of the call on
-- 'redquorum:released:' .. key (wait/notify.rs), so waiters wake without polling.
-- A release is tagged with the releasing token (or 'forced:' and the time).
local announce = {}
-- Lock key -> news that frees nothing, announced on the key's news channel
-- ('redquorum:released:' .. key .. ':news'), which only an election's
-- observers subscribe to: '+' .. token (a new leader) or
-- '~' .. token .. ':' .. value (a leader's new value).
local news = {}

-- An operation's entry in the call's answer: its result, or 'E' and its
-- error (`ok` and `result` as pcall gives them).
local function answer_of(ok, result)
  if ok then
    return result
  elseif type(result) == 'table' and result.err then
    return 'E' .. result.err
  end
  return 'E' .. tostring(result)
end

-- Announces the call's releases and news (see `announce`, `news`), best
-- effort: an ACL user without the channel permission still releases.
local function publish()
  for lock, token in pairs(announce) do
    redis.pcall(PUBLISH, 'redquorum:released:' .. lock, token)
  end
  for lock, tag in pairs(news) do
    redis.pcall(PUBLISH, 'redquorum:released:' .. lock .. ':news', tag)
  end
end

-- The plain lock's operations, on a string record. Each answers nil,
-- having written nothing, when its key holds a hash: the full operation
-- of the same code (below) then decides.
local plain = {}

-- Plain acquire: KEYS lock [, fence]; ARGV token, ttl. What the full
-- acquire answers for one lock of kind 'lock' (0 taken, 1 granted, P >= 1024
-- granted with the fence proposal P when the fence key is given, -2
-- granted but the fence key does not hold a number). Our own hold, asked
-- again (a retried acquire), is granted again and refreshed.
plain[OP_PLAIN_ACQUIRE] = function(keys, args)
  local lock, token = keys[1], args[1]
  if not redis.call('set', lock, token, 'NX', 'PX', args[2]) then
    local holder = redis.pcall('get', lock)
    if type(holder) ~= 'string' then
      return nil -- a lock record (or gone meanwhile): the full acquire reads it
    elseif holder ~= token then
      return 0
    end
    redis.call('pexpire', lock, args[2])
  end
  -- Taken again in this call: it was never free.
  announce[lock] = nil
  if not keys[2] then
    return 1
  end
  return peek(keys[2]) or -2
end

-- Plain release: KEYS lock; ARGV token. 1 removed, 0 not there.
plain[OP_PLAIN_RELEASE] = function(keys, args)
  local lock, token = keys[1], args[1]
  local holder = redis.pcall('get', lock)
  if type(holder) == 'table' then
    return nil
  elseif holder ~= token then
    return 0
  end
  redis.call('del', lock)
  announce[lock] = token
  return 1
end

-- Plain renew: KEYS lock; ARGV token, ttl. 1 when our hold was live and
-- now lasts ttl more, 0 when not.
plain[OP_PLAIN_EXTEND] = function(keys, args)
  local holder = redis.pcall('get', keys[1])
  if type(holder) == 'table' then
    return nil
  elseif holder ~= args[1] then
    return 0
  end
  redis.call('pexpire', keys[1], args[2])
  return 1
end

-- One operation's answer entry by the plain lock's version of its code, on
-- its string record; nil when its code has none, or when that found a lock
-- record there (having written nothing: the full operation decides).
local function run_plain(code, keys, args)
  local run = plain[code]
  if run then
    local ok, answer = pcall(run, keys, args)
    if not ok or answer ~= nil then
      return answer_of(ok, answer)
    end
  end
  return nil
end

-- The next operation's keys and arguments, once it stopped a run for the
-- full operations (its plain version, if any, answered nil).
local pending = nil

-- Most calls carry one plain operation (an idle node's): answered here, as
-- the first of `run_operations` below would, before anything else is
-- defined (the batch's bookkeeping costs a single operation more than the
-- operation itself). Any other single operation goes on to the full ones.
if #ARGV == 3 + tonumber(ARGV[3]) then
  local entry = run_plain(ARGV[1], KEYS, { ARGV[4], ARGV[5] })
  if entry then
    publish()
    return { entry }
  end
  pending = { KEYS, { unpack(ARGV, 4) } }
end

-- The call's answer: one entry per operation, in order.
local answers = {}
-- The next operation's code in ARGV, and its first key in KEYS.
local next_arg, next_key = 1, 1

-- Runs the call's operations from the next one, in order: a plain lock's
-- operation first on its string record (`run_plain`), any other by `full`
-- (code -> function). With `full` nil, stops at the first operation that needs
-- it and answers false, so that the rest of the script (which defines
-- `full`) runs only for a call that needs it; true when every operation has
-- its answer.
local function run_operations(full)
  while next_arg <= #ARGV do
    local code = ARGV[next_arg]
    local key_count, arg_count = tonumber(ARGV[next_arg + 1]), tonumber(ARGV[next_arg + 2])
    local op_keys, op_args, entry
    if pending then
      op_keys, op_args, pending = pending[1], pending[2], nil
    else
      op_keys = { unpack(KEYS, next_key, next_key + key_count - 1) }
      op_args = { unpack(ARGV, next_arg + 3, next_arg + 2 + arg_count) }
      entry = run_plain(code, op_keys, op_args)
    end
    if not entry then
      if not full then
        pending = { op_keys, op_args }
        return false
      end
      local run = full[code]
      if run then
        entry = answer_of(pcall(run, op_keys, op_args))
      else
        entry = answer_of(false, 'unknown operation ' .. tostring(code))
      end
    end
    answers[#answers + 1] = entry
    next_arg = next_arg + 3 + arg_count
    next_key = next_key + key_count
  end
  return true
end

-- A batch of plain operations (a loaded node's) is answered here too,
-- before anything else is defined.
if run_operations(nil) then
  publish()
  return answers
end

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

-- The fence counter's next proposal (see `peek`), stored; nil if the
-- fence key does not hold a number.
local function propose(fence)
  local proposal = peek(fence)
  if proposal then
    redis.call('set', fence, string.format('%.0f', proposal), 'PX', 86400000)
  end
  return proposal
end

-- The highest proposal of the fence counters keys[first] .. keys[last]
-- by `each` (peek or propose), or nil and the first key that does not
-- hold a number.
local function highest_of(each, keys, first, last)
  local highest = 0
  for i = first, last do
    local proposal = each(keys[i])
    if not proposal then
      return nil, keys[i]
    end
    highest = math.max(highest, proposal)
  end
  return highest
end

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
  local fencing = tonumber(args[2])
  for i = 1, n do
    promote(keys[i], states[i])
    redis.call('hset', keys[i], 'f:' .. token, args[2])
  end
  for i = n + 1, #keys do
    local stored = redis.call('get', keys[i])
    if stored ~= false then
      stored = tonumber(stored)
      if stored == nil then
        error('fence key ' .. keys[i] .. ' does not hold a number')
      end
    end
    if stored == false or stored < fencing then
      redis.call('set', keys[i], args[2], 'PX', 86400000)
    else
      redis.call('pexpire', keys[i], 86400000)
    end
  end
  return 1
end

-- Propose a fencing token on its own (when the acquire could not): KEYS
-- fence_1 .. fence_f. Returns the highest proposal.
ops[OP_PROPOSE] = function(keys, _)
  local highest, bad = highest_of(propose, keys, 1, #keys)
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
  end
  return ops[OP_PROPOSE]({ fence })
end

-- Inspect, read-only: KEYS lock, fence. Returns { kind, owner, intent,
-- fence counter, pttl, lock-delay ms left, then per live hold: token, ms
-- left, owner information, committed fencing token } with '' for what is
-- absent.
ops[OP_INSPECT] = function(keys, _)
  local lock, fence = keys[1], keys[2]
  local record, err = read(lock)
  if not record then
    error(err)
  end
  local now = clock()
  -- As load() would see it: an expired hold with a lock-delay blocks.
  local blocked_until = tonumber(record.blocked) or 0
  for token, expiry in pairs(record.expiries) do
    local delay = record.delays[token]
    if expiry <= now and delay then
      blocked_until = math.max(blocked_until, expiry + delay)
    end
  end
  local counter = redis.pcall('get', fence)
  if type(counter) ~= 'string' then
    counter = ''
  end
  local blocked = math.max(0, blocked_until - now)
  local answer = {
    record.kind or '', record.owner or '', record.intent or '', counter,
    redis.call('pttl', lock), blocked,
  }
  for token, expiry in pairs(record.expiries) do
    if expiry > now then
      answer[#answer + 1] = token
      answer[#answer + 1] = expiry - now
      answer[#answer + 1] = record.meta[token] or ''
      answer[#answer + 1] = record.fencings[token] or ''
    end
  end
  return answer
end

-- The call needs the operations defined above: its operations from the one
-- that stopped the plain run (dispatch.lua).
run_operations(ops)
publish()
return answers
