-- Mutants only (src/mutants.rs): run after ops.lua in builds with
-- `--cfg redquorum_mutants`. 'K' (extend-keeps-expiry) and 'J'
-- (plain-extend-keeps-expiry): each extended lock's key
-- gets back the time to live it had before the extend, so the holds in
-- the record say "extended" while the key expires as if it had not been.
for _, kept in ipairs(kept_expiry) do
  local key, ttl = kept[1], kept[2]
  if ttl > 0 and redis.call('exists', key) == 1 then
    redis.call('pexpire', key, ttl)
  end
end
