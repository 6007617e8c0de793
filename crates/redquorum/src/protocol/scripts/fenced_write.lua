-- Write a value only if the writer's fencing token is at least the highest
-- one this protected resource has seen, and remember the token.
-- KEYS[1] the resource's fence key (highest token seen); KEYS[2] the data key.
-- ARGV[1] the writer's token (decimal u64); ARGV[2] the value.
-- Returns the highest token after the call, as a string: equal to ARGV[1]
-- when the write happened, higher when it was refused as stale.
-- Tokens are compared as decimal strings (length, then bytes), so every u64
-- compares exactly; Lua's doubles would not.
local function below(a, b)
  if #a ~= #b then
    return #a < #b
  end
  return a < b
end
local token = ARGV[1]
if not string.match(token, '^[1-9][0-9]*$') and token ~= '0' then
  return redis.error_reply('ERR fencing token must be a decimal integer')
end
local highest = redis.call('get', KEYS[1])
if highest ~= false and below(token, highest) then
  return highest
end
redis.call('set', KEYS[1], token)
redis.call('set', KEYS[2], ARGV[2])
return token
