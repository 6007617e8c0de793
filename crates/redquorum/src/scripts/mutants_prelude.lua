-- Mutants only (src/mutants.rs): put before ops.lua in builds with the
-- `mutants` feature, never in any other build. It turns the planted
-- operation codes into ordinary ones, so ops.lua then does the wrong thing:
--   'R' release, 'E' extend WITHOUT the owner check: the token argument
--       becomes that of the lock's hold with the latest expiry, whoever owns
--       it, so the owner check in ops.lua always passes.
-- The encoding is ops.lua's: per operation, code, key count, argument
-- count, arguments; the token is an operation's first argument and its
-- lock its first key.
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
    next_key = next_key + tonumber(ARGV[next_arg + 1])
    next_arg = next_arg + 3 + tonumber(ARGV[next_arg + 2])
  end
end
