-- The call's answer: one entry per operation, in order.
local answers = {}
-- The next operation's code in ARGV, and its first key in KEYS.
local next_arg, next_key = 1, 1
-- Whether the next operation's plain version already answered nil.
local needs_full = false

-- Runs the call's operations from the next one, in order: a plain lock's
-- operation first on its string record (`plain`), any other by `full` (code
-- -> function). With `full` nil, stops at the first operation that needs
-- it and answers false, so that the rest of the script (which defines
-- `full`) runs only for a call that needs it; true when every operation has
-- its answer.
local function run_operations(full)
  while next_arg <= #ARGV do
    local code = ARGV[next_arg]
    local key_count, arg_count = tonumber(ARGV[next_arg + 1]), tonumber(ARGV[next_arg + 2])
    -- A call of one operation (an idle node's) passes its KEYS as they are.
    local op_keys = KEYS
    if key_count ~= #KEYS then
      op_keys = { unpack(KEYS, next_key, next_key + key_count - 1) }
    end
    local op_args = { unpack(ARGV, next_arg + 3, next_arg + 2 + arg_count) }
    local ok, answer = true, nil
    if plain[code] and not needs_full then
      ok, answer = pcall(plain[code], op_keys, op_args)
    end
    needs_full = false
    if ok and answer == nil then
      if not full then
        needs_full = true
        return false
      end
      local run = full[code]
      if run then
        ok, answer = pcall(run, op_keys, op_args)
      else
        ok, answer = false, 'unknown operation ' .. tostring(code)
      end
    end
    answers[#answers + 1] = answer_of(ok, answer)
    next_arg = next_arg + 3 + arg_count
    next_key = next_key + key_count
  end
  return true
end

-- Most calls carry plain operations only (an idle node's one, or a batch of
-- them): answered here, before anything else is defined.
if run_operations(nil) then
  publish()
  return answers
end

