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

-- Every answer ends with the server's replication id, read in this same
-- run: a promotion gives a new one, so the client knows whether the server
-- that answered was promoted since it last answered (a failover away and
-- back between two slot maps: node/batch/replication_id.rs). Empty when
-- INFO is denied to the user. (A plain find: a pattern match costs twice
-- as much as reading INFO.)
local function finished(answers)
  local info = redis.pcall('INFO', 'replication')
  local at = type(info) == 'string' and string.find(info, 'master_replid:', 1, true)
  answers[#answers + 1] = at and string.sub(info, at + 14, at + 53) or ''
  return answers
end
