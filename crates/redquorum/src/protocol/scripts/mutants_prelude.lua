-- Mutants only (src/mutants.rs): put before ops.lua in builds with
-- `--cfg redquorum_mutants`, never in any other build. It turns the planted
-- operation codes into ordinary ones, so ops.lua then does the wrong thing:
--   'R' release, 'E' extend WITHOUT the owner check: the token argument
--       becomes that of the lock's hold with the latest expiry, whoever owns
--       it, so the owner check in ops.lua always passes.
--   'X' release that first removes every OTHER hold of the lock record (the
--       other readers, permits or one owner's other holds go with it).
--   'A' acquire that, for a reader, relabels a live record of any kind
--       but 'write' as a readers' record, so the reader is admitted beside it.
--   'K' extend whose locks' keys keep the expiry they had before it:
--       their time to live is noted here, and mutants_postlude.lua puts it
--       back after ops.lua ran (ops.lua runs as a function in between).
--   'F' acquire, 'P' propose, whose fence proposals leave out the clock
--       floor: `floorless` (ops.lua's `peek` reads it in mutants builds,
--       see mutants.rs) makes a proposal the counter plus one (at least
--       1024, what the caller reads as a proposal).
--   'L' plain acquire that first overwrites the lock's record with its own
--       (SET without NX), whoever holds it.
--   'U' plain release whose token becomes that of the string record's
--       holder, whoever it is (no owner check).
--   'N' plain extend that first takes the lock where its record is gone
--       (SET NX), reviving a lapsed hold.
--   'J' plain extend whose string record's key keeps the expiry it had
--       (noted here, put back by mutants_postlude.lua, as for 'K'): the
--       plain lock answers "renewed" and the key expires as before.
--   'B' force-release that first deletes the lock whoever holds it now,
--       not only what its first round read.
-- The encoding is ops.lua's: per operation, code, key count, argument
-- count, arguments; the token is an operation's first argument and its
-- lock its first key.
local kept_expiry = {}
local floorless = false
do
  local next_arg, next_key = 1, 1
  while next_arg <= #ARGV do
    local code = ARGV[next_arg]
    if code == 'R' or code == 'E' then
      ARGV[next_arg] = string.lower(code)
      local flat = redis.pcall('hgetall', KEYS[next_key])
      local latest = nil
      if type(flat) == 'table' and not flat.err then
        for i = 1, #flat, 2 do
          local expiry = tonumber(flat[i + 1])
          if string.sub(flat[i], 1, 2) == 'h:' and (not latest or expiry > latest) then
            latest = expiry
            ARGV[next_arg + 3] = string.sub(flat[i], 3)
          end
        end
      end
    end
    if code == 'X' then
      ARGV[next_arg] = 'r'
      local token = ARGV[next_arg + 3]
      local flat = redis.pcall('hgetall', KEYS[next_key])
      if type(flat) == 'table' and not flat.err and redis.call('hexists', KEYS[next_key], 'h:' .. token) == 1 then
        for i = 1, #flat, 2 do
          local prefix, other = string.sub(flat[i], 1, 2), string.sub(flat[i], 3)
          if (prefix == 'h:' or prefix == 'm:' or prefix == 'd:' or prefix == 'f:') and other ~= token then
            redis.call('hdel', KEYS[next_key], flat[i])
          end
        end
      end
    elseif code == 'F' or code == 'P' then
      -- Not string.lower: 'f' is the force-release.
      ARGV[next_arg] = code == 'F' and 'a' or 'p'
      floorless = true
    elseif code == 'L' or code == 'N' then
      ARGV[next_arg] = string.lower(code)
      local token, ttl = ARGV[next_arg + 3], ARGV[next_arg + 4]
      if code == 'L' then
        redis.call('set', KEYS[next_key], token, 'PX', ttl)
      else
        redis.call('set', KEYS[next_key], token, 'NX', 'PX', ttl)
      end
    elseif code == 'B' then
      ARGV[next_arg] = 'f'
      redis.call('del', KEYS[next_key])
    elseif code == 'U' then
      ARGV[next_arg] = 'u'
      local holder = redis.pcall('get', KEYS[next_key])
      if type(holder) == 'string' then
        ARGV[next_arg + 3] = holder
      end
    elseif code == 'J' then
      ARGV[next_arg] = 'n'
      -- Only a string record (the plain lock's own): a hash goes to ops.e as it is.
      if type(redis.pcall('get', KEYS[next_key])) == 'string' then
        kept_expiry[#kept_expiry + 1] = { KEYS[next_key], redis.call('pttl', KEYS[next_key]) }
      end
    elseif code == 'K' then
      ARGV[next_arg] = 'e'
      for i = next_key, next_key + tonumber(ARGV[next_arg + 1]) - 1 do
        kept_expiry[#kept_expiry + 1] = { KEYS[i], redis.call('pttl', KEYS[i]) }
      end
    elseif code == 'A' then
      ARGV[next_arg] = 'a'
      -- A single lock's kind is the operation's 8th argument.
      local single = tonumber(ARGV[next_arg + 1]) >= 1 and tonumber(ARGV[next_arg + 2]) == 8
      if single and ARGV[next_arg + 10] == 'read' then
        local kind = redis.pcall('hget', KEYS[next_key], 'kind')
        if type(kind) == 'string' and kind ~= 'write' and kind ~= 'read' then
          redis.call('hset', KEYS[next_key], 'kind', 'read')
        end
      end
    end
    next_key = next_key + tonumber(ARGV[next_arg + 1])
    next_arg = next_arg + 3 + tonumber(ARGV[next_arg + 2])
  end
end
