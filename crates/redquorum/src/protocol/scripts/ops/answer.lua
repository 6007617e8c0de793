-- Lock key -> tag: announced at the end of the call on
-- 'redquorum:released:' .. key (wait/notify.rs), so waiters wake without polling.
-- A release is tagged with the releasing token (or 'forced:' and the time).
local announce = {}
-- Lock key -> news that frees nothing, announced on the key's news channel
-- ('redquorum:released:' .. key .. ':news'), which only an election's
-- observers subscribe to: '+' .. token (a new leader) or
-- '~' .. token .. ':' .. value (a leader's new value).
local news = {}
-- Lock key -> tag: holds taken from their holders (a force-release, a hold
-- moved to a ticket's adopter), announced on the key's lost channel
-- ('redquorum:released:' .. key .. ':lost'), where the holders' watchdogs
-- listen to extend at once, and learn of the loss in one round trip.
local lost = {}

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
  for lock, tag in pairs(lost) do
    redis.pcall(PUBLISH, 'redquorum:released:' .. lock .. ':lost', tag)
  end
end

