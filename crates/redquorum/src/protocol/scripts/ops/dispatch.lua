local ops -- full_operations(), once a call needs them
local answers = {}
local next_arg, next_key = 1, 1
while next_arg <= #ARGV do
  local code = ARGV[next_arg]
  local key_count, arg_count = tonumber(ARGV[next_arg + 1]), tonumber(ARGV[next_arg + 2])
  local op_keys = { unpack(KEYS, next_key, next_key + key_count - 1) }
  local op_args = { unpack(ARGV, next_arg + 3, next_arg + 2 + arg_count) }
  next_arg = next_arg + 3 + arg_count
  next_key = next_key + key_count
  local ok, answer = true, nil
  if plain[code] then
    ok, answer = pcall(plain[code], op_keys, op_args)
  end
  if ok and answer == nil then
    ops = ops or full_operations()
    local run = ops[code]
    if run then
      ok, answer = pcall(run, op_keys, op_args)
    else
      ok, answer = false, 'unknown operation ' .. tostring(code)
    end
  end
  answers[#answers + 1] = answer_of(ok, answer)
end
publish()
return answers
