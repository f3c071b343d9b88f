-- What a Lua error caught by pcall costs (bench/landing_cost.sh): luaD_throw
-- longjmps to luaD_rawrunprotected. Prints process CPU ns per
-- pcall(error, {}) in batches of 2,000 (os.clock: Lua has no thread clock),
-- the 10th percentile of the batches: on a shared VM a batch that lost its
-- core is slower, and a rare one is undercounted.
local n = tonumber(arg and arg[1]) or 1000000
local batch = 2000
for _ = 1, 1000 do pcall(error, {}) end
local t = {}
for b = 1, math.max(1, n // batch) do
  local t0 = os.clock()
  for _ = 1, batch do pcall(error, {}) end
  t[b] = os.clock() - t0
end
table.sort(t)
print(string.format("%.1f", t[#t // 10 + 1] / batch * 1e9))
