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

