-- What a Lua error caught by pcall costs (bench/landing_cost.sh): luaD_throw
-- longjmps to luaD_rawrunprotected. Prints the least process CPU ns per
-- pcall(error, {}) over batches of 2,000 (os.clock: Lua has no thread
-- clock; a batch that lost its core is slower, never faster).
local n = tonumber(arg and arg[1]) or 1000000
local batch = 2000
for _ = 1, 1000 do pcall(error, {}) end
local best = math.huge
for _ = 1, n // batch do
  local t = os.clock()
  for _ = 1, batch do pcall(error, {}) end
  best = math.min(best, os.clock() - t)
end
print(string.format("%.1f", best / batch * 1e9))
