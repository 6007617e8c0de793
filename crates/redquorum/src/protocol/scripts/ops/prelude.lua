-- Every lock operation of every kind, one or several per call (group
-- commit: see node/batch/batcher.rs). For operation i, ARGV holds its code, its key
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

-- Raises the fence counter to a written-back fencing token (decimal
-- text), never lowers it, and keeps it another 24 h; errors if the fence
-- key does not hold a number.
local function raise(fence, fencing)
  local stored = redis.call('get', fence)
  if stored ~= false then
    stored = tonumber(stored)
    if stored == nil then
      error('fence key ' .. fence .. ' does not hold a number')
    end
  end
  if stored == false or stored < tonumber(fencing) then
    redis.call('set', fence, fencing, 'PX', 86400000)
  else
    redis.call('pexpire', fence, 86400000)
  end
end

