-- Take records out of one bucket (single server and cluster). KEYS: the bucket; ARGV: whole 8-byte records.
--#include sketch_records.lua

local cur = redis.call('GET', KEYS[1])
if not cur then return 0 end
local n = 0
for i = 1, #ARGV do
  local p = records(cur, ARGV[i])[1]
  if p then cur = string.sub(cur, 1, p - 1) .. string.sub(cur, p + 8); n = n + 1 end
end
if n > 0 then
  if #cur == 0 then redis.call('DEL', KEYS[1]) else redis.call('SET', KEYS[1], cur) end
end
return n
