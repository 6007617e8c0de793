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

