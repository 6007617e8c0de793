-- Single-server form (node/script.rs): releases and news are announced by
-- PUBLISH.
local PUBLISH = 'publish'

-- The answers as they are (the cluster form appends the replication id).
local function finished(answers)
  return answers
end
