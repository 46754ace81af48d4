-- Cluster: take one page's entry out of one block table if it is still its own. KEYS: block; ARGV: fp, id.

local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v or string.sub(v, 6 + string.byte(v, 5)) ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
return 1
