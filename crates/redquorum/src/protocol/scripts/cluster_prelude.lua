-- Cluster form (node/script.rs, LockScript::encode): KEYS declares the first
-- operation's first key only, and ARGV ends with every operation's keys
-- then their count. Made KEYS and ARGV again here, as locals that the script
-- below reads instead of the globals.
local KEYS, ARGV = (function(argv)
  local count = tonumber(argv[#argv])
  local first_key = #argv - count
  return { unpack(argv, first_key, #argv - 1) }, { unpack(argv, 1, first_key - 1) }
end)(ARGV)
-- A PUBLISH crosses the cluster bus to every shard; an SPUBLISH stays in the
-- shard of the channel's slot (the lock's), where the notifier listens
-- (wait/channels.rs).
local PUBLISH = 'spublish'

