-- Mutants only (src/mutants.rs; never in a build without the `mutants`
-- feature): run before lock_ops.lua, this rewrites the planted operation
-- kinds into ordinary ones, so the real script then does the wrong thing:
--   'R' release, 'E' extend WITHOUT the owner check: the owner argument
--       becomes whatever the key holds, so the owner check always passes;
--   'V' an extend that REVIVES: on an absent key it becomes an acquire.
do
  local next_key = 1
  for i = 1, #ARGV / 3 do
    local kind = ARGV[3 * i - 2]
    local key = KEYS[next_key]
    next_key = next_key + (kind == 'f' and 2 or 1)
    if kind == 'R' or kind == 'E' then
      local current = redis.pcall('get', key)
      ARGV[3 * i - 2] = kind == 'R' and 'r' or 'e'
      if type(current) == 'string' then
        ARGV[3 * i - 1] = current
      end
    elseif kind == 'V' then
      ARGV[3 * i - 2] = redis.call('exists', key) == 0 and 'a' or 'e'
    end
  end
end
