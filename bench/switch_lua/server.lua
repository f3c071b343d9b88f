-- A line server: each request "work N" sorts N pseudo-random numbers and
-- formats a checksum; "q" ends it. Answers "ok ..." per line.
io.stdout:setvbuf("line")
local seed = 1
local function rnd() seed = (seed * 1103515245 + 12345) % 2147483648; return seed end
for line in io.lines() do
  local cmd, n = line:match("^(%a+)%s*(%d*)$")
  if cmd == "q" then print("bye"); break end
  n = tonumber(n) or 0
  local t = {}
  for i = 1, n do t[i] = rnd() % 100000 end
  table.sort(t)
  local sum = 0
  for i = 1, n, 7 do sum = (sum + t[i] * i) % 1000003 end
  print(string.format("ok %s %d %d %d", cmd, n, t[1] or -1, sum))
end
