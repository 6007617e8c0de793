-- The plain lock's operations, on a string record. Each answers nil,
-- having written nothing, when its key holds a hash: the full operation
-- of the same code (below) then decides. Each reads its keys in place,
-- from KEYS[k] (`count` of them), and its arguments from ARGV[a]: a batch
-- of them makes no table per operation.
local plain = {}

-- Plain acquire: keys lock [, fence]; arguments token, ttl. What the full
-- acquire answers for one lock of kind 'lock' (0 taken, 1 granted, P >= 1024
-- granted with the fence proposal P when the fence key is given, -2
-- granted but the fence key does not hold a number). Our own hold, asked
-- again (a retried acquire), is granted again and refreshed.
plain[OP_PLAIN_ACQUIRE] = function(k, count, a)
  local lock, token, ttl = KEYS[k], ARGV[a], ARGV[a + 1]
  if not redis.call('set', lock, token, 'NX', 'PX', ttl) then
    local holder = redis.pcall('get', lock)
    if type(holder) ~= 'string' then
      return nil -- a lock record (or gone meanwhile): the full acquire reads it
    elseif holder ~= token then
      return 0
    end
    redis.call('pexpire', lock, ttl)
  end
  -- Taken again in this call: it was never free.
  announce[lock] = nil
  if count < 2 then
    return 1
  end
  return peek(KEYS[k + 1]) or -2
end

-- Whether the string record at `lock` is `token`'s hold: 0 when it is
-- not (another's, or gone), true when it is, nil when a lock record (a
-- hash) is there, which the full operation reads.
local function owns(lock, token)
  local holder = redis.pcall('get', lock)
  if type(holder) == 'table' then
    return nil
  end
  return holder == token or 0
end

-- Plain release: keys lock; arguments token. 1 removed, 0 not there.
plain[OP_PLAIN_RELEASE] = function(k, _, a)
  local lock, token = KEYS[k], ARGV[a]
  local ours = owns(lock, token)
  if ours ~= true then
    return ours
  end
  redis.call('del', lock)
  announce[lock] = token
  return 1
end

-- Plain renew: keys lock; arguments token, ttl. 1 when our hold was live
-- and now lasts ttl more, 0 when not.
plain[OP_PLAIN_EXTEND] = function(k, _, a)
  local ours = owns(KEYS[k], ARGV[a])
  if ours ~= true then
    return ours
  end
  redis.call('pexpire', KEYS[k], ARGV[a + 1])
  return 1
end

-- Plain commit (a fencing token's write-back): keys lock, fence; arguments
-- token, fencing token, 1. What the full commit answers, raising the
-- counter (`raise`) while our hold is live, but the record stays a string:
-- the token is not noted in the hold (a string has no room for it), so the
-- hold's release and extend stay the plain ones.
plain[OP_COMMIT] = function(k, count, a)
  if count ~= 2 or ARGV[a + 2] ~= '1' then
    return nil -- several locks: the full commit
  end
  local ours = owns(KEYS[k], ARGV[a])
  if ours ~= true then
    return ours
  end
  raise(KEYS[k + 1], ARGV[a + 1])
  return 1
end
