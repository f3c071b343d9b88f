-- What a Lua error caught by pcall costs (bench/landing_cost.sh): luaD_throw
-- longjmps to luaD_rawrunprotected. Prints CPU ns per pcall(error, {}).
local n = tonumber(arg and arg[1]) or 1000000
for _ = 1, 1000 do pcall(error, {}) end
local t = os.clock()
for _ = 1, n do pcall(error, {}) end
print(string.format("%.1f", (os.clock() - t) / n * 1e9))
