-- Single-server form (node/script.rs): releases and news are announced by
-- PUBLISH.
local PUBLISH = 'publish'

