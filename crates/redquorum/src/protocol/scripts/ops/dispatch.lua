-- One operation's answer entry by the plain lock's version of its code, on
-- its string record; nil when its code has none, or when that found a lock
-- record there (having written nothing: the full operation decides).
local function run_plain(code, keys, args)
  local run = plain[code]
  if run then
    local ok, answer = pcall(run, keys, args)
    if not ok or answer ~= nil then
      return answer_of(ok, answer)
    end
  end
  return nil
end

-- Most calls carry one plain operation (an idle node's): answered here, as
-- the first of `run_operations` below would, before anything else is
-- defined (the batch's bookkeeping costs a single operation more than the
-- operation itself).
if #ARGV == 3 + tonumber(ARGV[3]) then
  local entry = run_plain(ARGV[1], KEYS, { ARGV[4], ARGV[5] })
  if entry then
    publish()
    return { entry }
  end
end

-- The call's answer: one entry per operation, in order.
local answers = {}
-- The next operation's code in ARGV, and its first key in KEYS.
local next_arg, next_key = 1, 1
-- Whether the next operation's plain version already answered nil.
local needs_full = false

-- Runs the call's operations from the next one, in order: a plain lock's
-- operation first on its string record (`run_plain`), any other by `full`
-- (code -> function). With `full` nil, stops at the first operation that needs
-- it and answers false, so that the rest of the script (which defines
-- `full`) runs only for a call that needs it; true when every operation has
-- its answer.
local function run_operations(full)
  while next_arg <= #ARGV do
    local code = ARGV[next_arg]
    local key_count, arg_count = tonumber(ARGV[next_arg + 1]), tonumber(ARGV[next_arg + 2])
    -- A call of one operation passes its KEYS as they are.
    local op_keys = KEYS
    if key_count ~= #KEYS then
      op_keys = { unpack(KEYS, next_key, next_key + key_count - 1) }
    end
    local op_args = { unpack(ARGV, next_arg + 3, next_arg + 2 + arg_count) }
    local entry = not needs_full and run_plain(code, op_keys, op_args)
    needs_full = false
    if not entry then
      if not full then
        needs_full = true
        return false
      end
      local run = full[code]
      if run then
        entry = answer_of(pcall(run, op_keys, op_args))
      else
        entry = answer_of(false, 'unknown operation ' .. tostring(code))
      end
    end
    answers[#answers + 1] = entry
    next_arg = next_arg + 3 + arg_count
    next_key = next_key + key_count
  end
  return true
end

-- A batch of plain operations (a loaded node's) is answered here too,
-- before anything else is defined.
if run_operations(nil) then
  publish()
  return answers
end

