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

