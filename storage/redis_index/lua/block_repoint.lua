-- Cluster: one block table's entry answers for another page (a displacement), if it is still the old page's.
-- KEYS: block; ARGV: fp, old id, new id. The insertion number and exact tag stay.

local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v then return 0 end
local head = 5 + string.byte(v, 5)
if string.sub(v, head + 1) ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], string.sub(v, 1, head) .. ARGV[3])
return 1
