-- One operation's answer entry by the plain lock's version of its code, on
-- its string record (its `count` keys from KEYS[k], its arguments from
-- ARGV[a]); nil when its code has none, or when that found a lock record
-- there (having written nothing: the full operation decides).
local function run_plain(code, k, count, a)
  local run = plain[code]
  if run then
    local ok, answer = pcall(run, k, count, a)
    if not ok or answer ~= nil then
      return answer_of(ok, answer)
    end
  end
  return nil
end

-- The next operation's keys and arguments, once it stopped a run for the
-- full operations (its plain version, if any, answered nil).
local pending = nil

-- Most calls carry one plain operation (an idle node's): answered here, as
-- the first of `run_operations` below would, before anything else is
-- defined (the batch's bookkeeping costs a single operation more than the
-- operation itself). Any other single operation goes on to the full ones.
if #ARGV == 3 + tonumber(ARGV[3]) then
  local entry = run_plain(ARGV[1], 1, tonumber(ARGV[2]), 4)
  if entry then
    publish()
    return finished({ entry })
  end
  pending = { KEYS, { unpack(ARGV, 4) } }
end

-- The call's answer: one entry per operation, in order.
local answers = {}
-- The next operation's code in ARGV, and its first key in KEYS.
local next_arg, next_key = 1, 1

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
    local op_keys, op_args, entry
    if pending then
      op_keys, op_args, pending = pending[1], pending[2], nil
    else
      entry = run_plain(code, next_key, key_count, next_arg + 3)
    end
    if not entry then
      if not op_keys then
        op_keys = { unpack(KEYS, next_key, next_key + key_count - 1) }
        op_args = { unpack(ARGV, next_arg + 3, next_arg + 2 + arg_count) }
      end
      if not full then
        pending = { op_keys, op_args }
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
  return finished(answers)
end

