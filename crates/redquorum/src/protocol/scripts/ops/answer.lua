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

-- Most calls carry one plain operation (an idle node's): answered here,
-- before anything else is defined, unless it found a lock record.
if plain[ARGV[1]] and #ARGV == 3 + tonumber(ARGV[3]) then
  local ok, result = pcall(plain[ARGV[1]], KEYS, { ARGV[4], ARGV[5] })
  if not ok or result ~= nil then
    publish()
    return { answer_of(ok, result) }
  end
end

