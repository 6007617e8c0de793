-- The call needs the operations defined above: its operations from the one
-- that stopped the plain run (dispatch.lua).
run_operations(ops)
publish()
return finished(answers)
